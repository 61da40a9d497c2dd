"""Warm-up for a worker: build the shared precompiled header before the first candidate."""

from __future__ import annotations

from pathlib import Path

from evaluator.build.pch import ensure_pch
from evaluator.build.toolchain import host_compiler


def prepare_toolchain(cache_dir: Path, timeout_s: float = 900) -> str:
    """Build the precompiled <torch/extension.h> under cache_dir if missing; returns a log line."""
    directory, log = ensure_pch(Path(cache_dir), host_compiler(), timeout_s=timeout_s)
    return log or f"precompiled header ready in {directory}\n"
