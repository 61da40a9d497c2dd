from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.options import EvalOptions, TimingOptions

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "examples" / "relu"
CASES = Path(__file__).parent / "cases"


@pytest.fixture(scope="session")
def cpu_options(kjudge_home: Path) -> EvalOptions:
    return EvalOptions(
        device="cpu",
        trials=3,
        seed=1234,
        timing=TimingOptions(warmup_ms=1, max_time_s=0.05, min_reps=3),
        run_timeout_s=120,
        build_timeout_s=240,
        cache_dir=kjudge_home / "cache",
    )


@pytest.fixture(scope="module")
def gpu_options(kjudge_home: Path) -> EvalOptions:
    """The GPU tests' options (test_eval_gpu.py, test_prebuild_gpu.py)."""
    return EvalOptions(
        device="cuda",
        trials=3,
        seed=7,
        timing=TimingOptions(max_time_s=0.5),
        run_timeout_s=300,
        build_timeout_s=300,
        cache_dir=kjudge_home / "cache",
    )
