"""The `cpu` target: the host CPU. It keeps the whole pipeline testable without a GPU: `cpp`
builds with the host compiler and `triton` runs on Triton's interpreter."""

from __future__ import annotations

import platform
from functools import lru_cache
from pathlib import Path

from evaluator.result import Backend, Target

# Triton kernels run on CPU tensors only through the interpreter.
CHILD_ENV = {"TRITON_INTERPRET": "1"}


@lru_cache(maxsize=1)
def cpu_target() -> Target:
    return Target(backend=Backend.CPU, arch=platform.machine() or "unknown", device=_cpu_name())


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "CPU"
