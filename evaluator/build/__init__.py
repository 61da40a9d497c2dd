"""Native toolchains: cpp / cuda / hip sources -> Python extension modules (docs/internals.md).

- `build_native(...)`: a raw-source submission -> BuildOutput (module path and name), cached.
- `install_load_inline_shim(target, cache_dir)`: makes torch.utils.cpp_extension.load_inline /
  load inside a KernelBench candidate build for the device arch only, cached, and HIP on NVIDIA.
- `load_module(output)`: import a built module.
- `prepare_toolchain(cache_dir)`: build the precompiled torch header ahead of the first job.
"""

from evaluator.build.load_inline_shim import NativeBuildError, install_load_inline_shim
from evaluator.build.loader import load_module
from evaluator.build.models import BuildOutput
from evaluator.build.native import build_native
from evaluator.build.prepare import prepare_toolchain

__all__ = [
    "BuildOutput",
    "NativeBuildError",
    "build_native",
    "install_load_inline_shim",
    "load_module",
    "prepare_toolchain",
]
