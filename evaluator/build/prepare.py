"""Warm-up for a worker: build the shared precompiled header and the lite runtimes before the
first candidate, so neither lands on a candidate's clock."""

from __future__ import annotations

from pathlib import Path

from evaluator.build import lite
from evaluator.build.models import TrustedToolchain
from evaluator.build.pch import ensure_pch, find_pch
from evaluator.build.toolchain import host_compiler
from evaluator.result import Backend


def _flavors(backend: Backend | None) -> list[Backend]:
    """The lite runtimes a target of `backend` links: the CPU one (C++ units), and on NVIDIA the
    CUDA one."""
    return [Backend.CPU] + ([Backend.CUDA] if backend is Backend.CUDA else [])


def prepare_toolchain(cache_dir: Path, backend: Backend | None = None, timeout_s: float = 900) -> str:
    """Build the precompiled <torch/extension.h> under cache_dir if missing, and the lite
    runtimes of `backend`'s targets. Returns a line per piece."""
    cache_dir = Path(cache_dir)
    directory, log = ensure_pch(cache_dir, host_compiler(), timeout_s=timeout_s)
    lines = [log.strip() or f"precompiled header ready in {directory}"]
    for flavor in _flavors(backend):
        runtime, runtime_log = lite.ensure_runtime(cache_dir, flavor, timeout_s=timeout_s)
        lines.append(runtime_log.strip() or f"lite runtime ({flavor.value}) ready in {runtime}")
    return "\n".join(lines) + "\n"


def ensure_toolchain(cache_dir: Path, backend: Backend, timeout_s: float = 900) -> str:
    """What a sandboxed build reads but must not make (its load_inline builds): the header and
    the lite runtimes, built here by the trusted parent when missing. Returns what was built."""
    cache_dir = Path(cache_dir)
    log = ensure_pch(cache_dir, host_compiler(), timeout_s=timeout_s)[1]
    for flavor in _flavors(backend):
        log += lite.ensure_runtime(cache_dir, flavor, timeout_s=timeout_s)[1]
    return log


def trusted_toolchain(cache_dir: Path, backend: Backend) -> TrustedToolchain:
    """Where `ensure_toolchain` left the header and the lite runtimes, for a sandboxed child."""
    runtimes = {flavor.value: lite.find_runtime(Path(cache_dir), flavor) for flavor in _flavors(backend)}
    return TrustedToolchain(
        pch_dir=find_pch(Path(cache_dir), host_compiler()),
        lite={flavor: path for flavor, path in runtimes.items() if path is not None},
    )
