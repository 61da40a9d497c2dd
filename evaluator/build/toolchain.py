"""Facts about the local toolchain and the installed PyTorch that every command line needs."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sysconfig
import warnings
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel


class TorchInfo(BaseModel):
    version: str
    include_dirs: list[str]
    library_dir: str
    python_include: str
    cxx11_abi: int
    cxx_std: str
    is_rocm: bool
    pybind11_flags: list[str]

    def library_exists(self, name: str) -> bool:
        return (Path(self.library_dir) / f"lib{name}.so").exists()


def _torch_cxx_std() -> str:
    """The C++ standard PyTorch's own extension builder uses (c++17 up to 2.9, c++20 from 2.10)."""
    from torch.utils import cpp_extension

    try:
        text = inspect.getsource(cpp_extension._write_ninja_file_to_build_library)
    except (AttributeError, OSError, TypeError):
        return "c++17"
    return "c++20" if "c++20" in text else "c++17"


_given: TorchInfo | None = None


def use_torch_info(info: TorchInfo) -> None:
    """Take the torch facts from the trusted parent: a sandboxed compile child then never
    imports torch, which cost 2-4 s of each compile (more than a lite unit's compiler time)."""
    global _given
    _given = info


def torch_info() -> TorchInfo:
    return _given if _given is not None else _read_torch_info()


@lru_cache(maxsize=1)
def _read_torch_info() -> TorchInfo:
    import torch
    from torch.utils import cpp_extension

    torch_dir = Path(torch.__file__).parent
    include = torch_dir / "include"
    with warnings.catch_warnings():  # deprecated (and empty) from torch 2.9; older torch needs it
        warnings.simplefilter("ignore", DeprecationWarning)
        pybind = getattr(cpp_extension, "_get_pybind11_abi_build_flags", lambda: [])()
    return TorchInfo(
        version=torch.__version__,
        include_dirs=[str(include), str(include / "torch" / "csrc" / "api" / "include")],
        library_dir=str(torch_dir / "lib"),
        python_include=sysconfig.get_path("include", scheme="posix_prefix"),
        cxx11_abi=int(torch._C._GLIBCXX_USE_CXX11_ABI),
        cxx_std=_torch_cxx_std(),
        is_rocm=torch.version.hip is not None,
        pybind11_flags=list(pybind),
    )


@lru_cache(maxsize=4)
def host_compiler() -> str:
    """The host C++ compiler: $CXX unless it is hipcc (KernelBench's HIP prompt sets CXX=hipcc)."""
    cxx = os.environ.get("CXX", "")
    if cxx and "hipcc" not in Path(cxx).name and shutil.which(cxx):
        return shutil.which(cxx) or cxx
    for name in ("g++", "c++", "clang++"):
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("no host C++ compiler (g++, c++ or clang++) on PATH")


@lru_cache(maxsize=8)
def compiler_version(compiler: str) -> str:
    """First line of `compiler --version`: part of cache keys, since objects depend on it."""
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else "unknown"


def is_gcc(compiler: str) -> bool:
    """GCC's .gch precompiled headers are what kjudge uses; clang's PCH works differently."""
    version = compiler_version(compiler).lower()
    return ("g++" in version or "gcc" in version) and "clang" not in version


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def torch_defines(info: TorchInfo, module_name: str) -> list[str]:
    """Macros every unit of a torch extension is compiled with (as PyTorch's builder sets them)."""
    return [
        f"-DTORCH_EXTENSION_NAME={module_name}",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        f"-D_GLIBCXX_USE_CXX11_ABI={info.cxx11_abi}",
        *info.pybind11_flags,
    ]


def torch_system_includes(info: TorchInfo) -> list[str]:
    flags: list[str] = []
    for path in [*info.include_dirs, info.python_include]:
        flags += ["-isystem", path]
    return flags
