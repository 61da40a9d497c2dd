"""AMD targets: hipcc command lines, the offload arch, and CUDA sources through PyTorch's hipify.

How languages map on a ROCm build of PyTorch:
- `hip`: native. The source is compiled by hipcc as HIP (`-x hip`) for the device's gfx arch.
- `cuda`: translated to HIP by PyTorch's own hipify (the pass torch.utils.cpp_extension runs on
  .cu files of extensions on ROCm), then compiled like `hip`.
- `kernelbench`: load_inline/load go to PyTorch's own builder with PYTORCH_ROCM_ARCH set to the
  device arch (HIP in cpp_sources with CXX=hipcc is then exactly KernelBench's own setup).
No AMD GPU is lent to CI; this module is kept to command lines and pure functions so that unit
tests check the flags with a fake target.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from evaluator.result import Target

_GFX = re.compile(r"^gfx[0-9a-f]{3,5}$")

# What PyTorch's cpp_extension passes hipcc for extension sources on ROCm.
HIP_DEFINES = ["-D__HIP_PLATFORM_AMD__=1", "-DUSE_ROCM=1", "-DHIPBLAS_V2"]
# PyTorch adds these for hipified .cu sources only (mirrors __CUDA_NO_HALF_OPERATORS__ & co).
TORCH_HIP_HALF_DEFINES = [
    "-DCUDA_HAS_FP16=1",
    "-D__HIP_NO_HALF_OPERATORS__=1",
    "-D__HIP_NO_HALF_CONVERSIONS__=1",
]


def offload_arch(arch: str) -> str:
    """`gfx942:sramecc+:xnack-` (a gcnArchName) -> `gfx942`; rejects anything that is not gfx*."""
    base = arch.split(":", 1)[0].strip()
    if not _GFX.match(base):
        raise ValueError(f"not an AMD GPU architecture: {arch!r} (expected e.g. 'gfx942')")
    return base


def offload_arch_flags(target: Target) -> list[str]:
    return [f"--offload-arch={offload_arch(target.arch)}"]


def rocm_home() -> Path | None:
    for var in ("ROCM_HOME", "ROCM_PATH", "HIP_PATH"):
        value = os.environ.get(var)
        if value and Path(value).is_dir():
            return Path(value)
    hipcc = shutil.which("hipcc")
    if hipcc:
        return Path(hipcc).resolve().parent.parent
    default = Path("/opt/rocm")
    return default if default.is_dir() else None


def hipcc_path() -> str:
    home = rocm_home()
    if home is not None and (home / "bin" / "hipcc").exists():
        return str(home / "bin" / "hipcc")
    found = shutil.which("hipcc")
    if found is None:
        raise FileNotFoundError("hipcc not found: install ROCm or set ROCM_HOME")
    return found


def hipcc_compile_command(
    *,
    source: Path,
    output: Path,
    target: Target,
    cxx_std: str,
    includes: list[str],
    defines: list[str],
    extra: list[str],
    hipcc: str | None = None,
) -> list[str]:
    """One `hipcc -c -x hip` command: -O2, the device's own gfx arch only."""
    return [
        hipcc or hipcc_path(),
        "-c",
        "-x",
        "hip",
        str(source),
        "-o",
        str(output),
        "-O2",
        f"-std={cxx_std}",
        "-fPIC",
        *offload_arch_flags(target),
        *HIP_DEFINES,
        *defines,
        *includes,
        *extra,
    ]


def link_flags(torch_library_dir: str, existing: set[str]) -> list[str]:
    flags = [f"-l{lib}" for lib in ("c10_hip", "torch_hip") if lib in existing]
    home = rocm_home()
    if home is not None and (home / "lib").is_dir():
        flags += [f"-L{home / 'lib'}", f"-Wl,-rpath,{home / 'lib'}"]
    flags.append("-lamdhip64")
    return flags


def hipify_cuda_source(source: str) -> str:
    """CUDA C++ -> HIP C++ with PyTorch's hipify, as cpp_extension does for .cu files on ROCm."""
    from torch.utils.hipify import hipify_python

    with (
        contextlib.redirect_stdout(io.StringIO()),
        tempfile.TemporaryDirectory(prefix="kjudge-hipify-") as tmp,
    ):
        path = Path(tmp) / "kernel.cu"
        path.write_text(source)
        results = hipify_python.hipify(
            project_directory=tmp,
            output_directory=tmp,
            includes=[str(path)],
            extra_files=[str(path)],
            is_pytorch_extension=True,
            hipify_extra_files_only=True,
            show_detailed=False,
            show_progress=False,
        )
        result = results.get(str(path)) or results.get(os.path.abspath(path))
        hipified = getattr(result, "hipified_path", None) if result is not None else None
        return Path(hipified).read_text() if hipified else source


# --- device pinning -----------------------------------------------------------------------------
# ROCm has two layers of visibility. ROCR_VISIBLE_DEVICES (the ROCr runtime, below HIP) picks
# physical GPUs (indices or UUIDs); HIP_VISIBLE_DEVICES — and CUDA_VISIBLE_DEVICES, which HIP
# honours alike — then index *inside* that list. Pinning a process to GPU n with both set to n
# leaves it no GPU for n != 0 (GPU n of a one-GPU list does not exist), so a pinned process gets
# ROCR_VISIBLE_DEVICES=n and neither HIP_ nor CUDA_VISIBLE_DEVICES: it sees GPU n as device 0.
ROCR_VISIBLE = "ROCR_VISIBLE_DEVICES"
INNER_VISIBLE = ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def _id_list(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def physical_ids(env: Mapping[str, str], count: int) -> list[str]:
    """For each GPU a process started with `env` numbers 0..count-1 (torch's device index), the
    id to put in ROCR_VISIBLE_DEVICES to pin a process to that GPU alone. HIP_VISIBLE_DEVICES
    (else CUDA_VISIBLE_DEVICES) selects by position inside ROCR_VISIBLE_DEVICES' list."""
    rocr = _id_list(env.get(ROCR_VISIBLE))
    inner = _id_list(env.get(INNER_VISIBLE[0]))
    if inner is None:
        inner = _id_list(env.get(INNER_VISIBLE[1]))
    ids = []
    for i in range(count):
        chosen = inner[i] if inner is not None and i < len(inner) else str(i)
        if rocr is not None and chosen.isdigit() and int(chosen) < len(rocr):
            chosen = rocr[int(chosen)]
        ids.append(chosen)
    return ids


def pinned_env(env: Mapping[str, str], rocr_id: str) -> dict[str, str]:
    """`env` for a process that must see exactly the GPU `rocr_id` (from physical_ids), as
    device 0: ROCR_VISIBLE_DEVICES=<rocr_id>, HIP_/CUDA_VISIBLE_DEVICES removed."""
    pinned = {k: v for k, v in env.items() if k not in INNER_VISIBLE}
    pinned[ROCR_VISIBLE] = rocr_id
    return pinned
