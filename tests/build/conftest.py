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
def build_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kjudge-build-cache")


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
