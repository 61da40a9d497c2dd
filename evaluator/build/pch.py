"""A precompiled <torch/extension.h>, built once per (compiler, torch, flags) and shared.

Parsing torch/extension.h is most of a host unit's compile time (measured on the 2-core CI
box: 30.7 s for a binding unit without it, 13.4 s with it; building the .gch takes ~45 s and
~0.8 GB, once). GCC only (clang's PCH model differs); anything else builds without one.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

from evaluator.build import commands
from evaluator.build.cache import content_key, file_lock
from evaluator.build.toolchain import compiler_version, is_gcc, torch_info


def pch_key(compiler: str) -> str:
    info = torch_info()
    return content_key(
        "pch", compiler, compiler_version(compiler), info.model_dump(), commands.pch_flags(info)
    )


def pch_include_dir(cache_dir: Path, compiler: str) -> Path:
    """The directory to put first on the include path; it holds torch/extension.h.gch."""
    return cache_dir / "pch" / pch_key(compiler)


def find_pch(cache_dir: Path, compiler: str) -> Path | None:
    if not is_gcc(compiler):
        return None
    directory = pch_include_dir(cache_dir, compiler)
    return directory if (directory / (commands.PCH_HEADER + ".gch")).exists() else None


def _link_header(directory: Path) -> None:
    """GCC records the header's path as found through this directory, so a later
    `#include <torch/extension.h>` in the unit must resolve there too: link the real header."""
    link = directory / commands.PCH_HEADER
    if not link.is_symlink():
        tmp = link.with_name(f".{link.name}.{uuid.uuid4().hex[:8]}")
        tmp.symlink_to(Path(torch_info().include_dirs[0]) / commands.PCH_HEADER)
        os.replace(tmp, link)


def ensure_pch(cache_dir: Path, compiler: str, timeout_s: float = 600) -> tuple[Path | None, str]:
    """Build the precompiled header if missing. Returns (include dir or None, log)."""
    if not is_gcc(compiler):
        return None, f"no precompiled header: {compiler} is not GCC\n"
    directory = pch_include_dir(cache_dir, compiler)
    gch = directory / (commands.PCH_HEADER + ".gch")
    if gch.exists():
        _link_header(directory)
        return directory, ""
    with file_lock(cache_dir / "pch" / "build.lock"):
        if gch.exists():  # another worker built it while we waited
            return directory, ""
        gch.parent.mkdir(parents=True, exist_ok=True)
        tmp = gch.with_name(f".{gch.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
        cmd = commands.pch_command(compiler, torch_info(), tmp)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            tmp.unlink(missing_ok=True)
            return None, f"precompiled header timed out after {timeout_s:.0f}s; building without it\n"
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            return None, f"precompiled header failed; building without it:\n{proc.stderr[-4000:]}\n"
        _link_header(directory)
        os.rename(tmp, gch)
    return directory, "built precompiled torch/extension.h\n"
