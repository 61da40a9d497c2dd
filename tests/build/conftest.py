"""Shared fixtures for the native-build tests.

Compiling a torch extension costs 10-50 s on the 2-core CI box, so everything that builds
shares one session cache (the precompiled header is built once) and the number of distinct
builds is kept small.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from evaluator.result import Backend, Target


@pytest.fixture(scope="session")
def build_cache(kjudge_home: Path) -> Path:
    """The session home's native cache (evaluator.api._native_cache of its cache dir), not a
    private one: the precompiled header and the lite runtime (~75 s on 2 cores) are then built
    once per session, not once more here. Every build test compiles a source of its own (or one
    made distinct with a timestamp), so no test here finds another suite's module."""
    native = kjudge_home / "cache" / "native"
    native.mkdir(parents=True, exist_ok=True)
    return native


@pytest.fixture(scope="session")
def cpu_target() -> Target:
    return Target(backend=Backend.CPU, arch="x86_64", device="cpu")


@pytest.fixture(scope="session")
def sm90_target() -> Target:
    """An H100 as far as code generation is concerned; no GPU needed to compile for it."""
    return Target(backend=Backend.CUDA, arch="sm_90", device="NVIDIA H100 80GB HBM3")


@pytest.fixture(scope="session")
def gfx942_target() -> Target:
    return Target(backend=Backend.ROCM, arch="gfx942:sramecc+:xnack-", device="AMD Instinct MI300X")


@pytest.fixture(scope="session")
def device_target() -> Target:
    """The real GPU of this machine (GPU tests only)."""
    major, minor = torch.cuda.get_device_capability()
    return Target(backend=Backend.CUDA, arch=f"sm_{major}{minor}", device=torch.cuda.get_device_name())
