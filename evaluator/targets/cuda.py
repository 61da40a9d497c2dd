"""NVIDIA targets: where nvcc is, which code to generate, which libraries to link.

Code is generated for the device's own architecture only (sm_90 -> compute_90 PTX compiled to
sm_90 SASS), never a multi-arch fat binary or a PTX-only fallback: one cubin is faster to build
and is exactly what runs.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from evaluator.result import Target

_SM = re.compile(r"^sm_(\d{2,3})([af]?)$")

# What PyTorch's cpp_extension gives every .cu file; CUDA sources written for load_inline expect
# them (c10::Half and __half operators would otherwise be ambiguous).
TORCH_NVCC_DEFINES = [
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
]


def gencode_flags(target: Target) -> list[str]:
    """`sm_90` -> ['-gencode', 'arch=compute_90,code=sm_90'] (also sm_90a, sm_100a, sm_120f)."""
    match = _SM.match(target.arch)
    if match is None:
        raise ValueError(f"not an NVIDIA architecture: {target.arch!r} (expected e.g. 'sm_90')")
    number, suffix = match.groups()
    return ["-gencode", f"arch=compute_{number}{suffix},code=sm_{number}{suffix}"]


def cuda_home() -> Path | None:
    """CUDA_HOME / CUDA_PATH, else /usr/local/cuda, else the directory above a real nvcc."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value and (Path(value) / "bin" / "nvcc").exists():
            return Path(value)
    default = Path("/usr/local/cuda")
    if (default / "bin" / "nvcc").exists():
        return default
    nvcc = shutil.which("nvcc")
    if nvcc:
        home = Path(nvcc).resolve().parent.parent
        if (home / "include" / "cuda_runtime.h").exists():
            return home
    return None


def nvcc_path() -> str:
    home = cuda_home()
    if home is not None:
        return str(home / "bin" / "nvcc")
    found = shutil.which("nvcc")
    if found is None:
        raise FileNotFoundError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    return found


def include_flags() -> list[str]:
    home = cuda_home()
    return ["-isystem", str(home / "include")] if home is not None else []


def nvcc_compile_command(
    *,
    source: Path,
    output: Path,
    target: Target,
    cxx_std: str,
    includes: list[str],
    defines: list[str],
    extra: list[str],
    host_compiler: str | None = None,
) -> list[str]:
    """One `nvcc -c` command for a device unit: -O2 (host and device), device arch only."""
    cmd = [nvcc_path()]
    if host_compiler:
        cmd += ["-ccbin", host_compiler]
    cmd += [
        "-c",
        str(source),
        "-o",
        str(output),
        "-O2",
        f"-std={cxx_std}",
        *gencode_flags(target),
        "-Xcompiler",
        "-fPIC",
        "--expt-relaxed-constexpr",
        "--extended-lambda",
        *defines,
        *includes,
        *extra,
    ]
    return cmd


def link_flags(torch_library_dir: str, existing: set[str]) -> list[str]:
    """Libraries a CUDA torch extension links; torch's CUDA libraries only where installed."""
    torch_cuda = [f"-l{lib}" for lib in ("c10_cuda", "torch_cuda") if lib in existing]
    return [*torch_cuda, *cudart_link_flags()]


def cudart_link_flags() -> list[str]:
    """The CUDA runtime alone: what nvcc's objects call (kernel registration and launch)."""
    flags = []
    home = cuda_home()
    if home is not None:
        for sub in ("lib64", "lib"):
            if (home / sub).is_dir():
                flags += [f"-L{home / sub}", f"-Wl,-rpath,{home / sub}"]
                break
    flags.append("-lcudart")
    return flags
