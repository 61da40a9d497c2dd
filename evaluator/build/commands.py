"""Host-compiler command lines: the precompiled torch header, host units, the final link.

Device command lines (nvcc, hipcc) live with their targets (evaluator/targets/cuda.py, rocm.py).
Everything is built -O2 (-O3 adds compile time for little), except the generated pybind11 glue:
-O1 (engine.py; Unit.glue), whose speed is never measured.
"""

from __future__ import annotations

from pathlib import Path

from evaluator.build.toolchain import TorchInfo, torch_system_includes

PCH_HEADER = "torch/extension.h"


def pch_flags(info: TorchInfo) -> list[str]:
    """The flags a host unit and the precompiled header must share for GCC to accept the .gch."""
    return [
        "-O2",
        # at::parallel_for is a header template that runs serially unless the unit itself is
        # built with OpenMP (PyTorch's own kernels are): without this flag a CPU kernel's
        # parallel_for used one thread against eager's all. The extension links libgomp.so.1,
        # the soname torch already loaded, so both share one OpenMP runtime and thread pool.
        "-fopenmp",
        f"-std={info.cxx_std}",
        "-fPIC",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        f"-D_GLIBCXX_USE_CXX11_ABI={info.cxx11_abi}",
        *info.pybind11_flags,
    ]


def pch_command(compiler: str, info: TorchInfo, output: Path) -> list[str]:
    header = Path(info.include_dirs[0]) / PCH_HEADER
    return [
        compiler,
        "-x",
        "c++-header",
        str(header),
        "-o",
        str(output),
        *pch_flags(info),
        *torch_system_includes(info),
    ]


def cxx_compile_command(
    compiler: str,
    info: TorchInfo,
    *,
    source: Path,
    output: Path,
    module_name: str,
    pch_dir: Path | None,
    includes: list[str],
    extra: list[str],
) -> list[str]:
    cmd = [
        compiler,
        "-c",
        str(source),
        "-o",
        str(output),
        *pch_flags(info),
        f"-DTORCH_EXTENSION_NAME={module_name}",
    ]
    if pch_dir is not None:
        # -include makes torch/extension.h the unit's first header, so the .gch found in pch_dir
        # is used even when the author's own #include <torch/extension.h> comes later.
        # -Winvalid-pch: a .gch GCC declines (flags that differ) costs ~30 s; the log says why.
        cmd += [f"-I{pch_dir}", "-include", PCH_HEADER, "-Winvalid-pch"]
    return cmd + includes + torch_system_includes(info) + extra


def link_command(
    compiler: str,
    info: TorchInfo,
    *,
    objects: list[Path],
    output: Path,
    backend_flags: list[str],
    extra: list[str],
) -> list[str]:
    return [
        compiler,
        "-shared",
        *[str(o) for o in objects],
        "-o",
        str(output),
        f"-L{info.library_dir}",
        "-lc10",
        "-ltorch",
        "-ltorch_cpu",
        "-ltorch_python",
        "-fopenmp",  # libgomp, for the units' OpenMP regions (pch_flags)
        *backend_flags,
        *extra,
    ]
