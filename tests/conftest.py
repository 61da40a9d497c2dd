"""Shared test configuration: the `gpu` marker skips cleanly on machines without a GPU."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest


@functools.cache
def gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA or ROCm GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def kjudge_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One KJUDGE_HOME for the whole session: native builds, the precompiled torch header (~45 s
    on 2 cores) and baselines are built once and shared by every suite that evaluates; tests of
    the cache itself use their own directories. KJUDGE_TEST_HOME names one that several
    sessions share (tests/lanes.py: ./test.sh's two sessions side by side; bench/device_run.sh:
    the exclusive GPU tests after the others), as the workers of one host share theirs: the
    caches publish atomically and build under file locks. Under pytest-xdist the workers share
    one likewise, so the GPU suite's four workers do not build four headers and lite runtimes."""
    shared = os.environ.get("KJUDGE_TEST_HOME")
    if shared:
        home = Path(shared)
        home.mkdir(parents=True, exist_ok=True)
        return home
    if os.environ.get("PYTEST_XDIST_WORKER"):
        home = tmp_path_factory.getbasetemp().parent / "kjudge-home"
        home.mkdir(exist_ok=True)
        return home
    return tmp_path_factory.mktemp("kjudge-home")


@pytest.fixture(scope="session")
def kjudge_toolchain(kjudge_home: Path) -> Path:
    """The session home with its precompiled torch header and CPU lite runtime built, as a
    worker's start-up builds them (evaluator.build.prepare_toolchain, in this trusted process):
    tests that time or kill a C++ build need not run a throwaway candidate first to pay for
    them. Free when an earlier test of the session already built them."""
    from evaluator.build import prepare_toolchain

    prepare_toolchain(kjudge_home / "cache" / "native")  # evaluator.api._native_cache
    return kjudge_home
