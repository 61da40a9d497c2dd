from __future__ import annotations

import time
from pathlib import Path

from evaluator.baselines import COMPILE, EAGER, BaselineCache, BaselineEntry, missing
from evaluator.options import TimingOptions
from evaluator.timing import summarize, time_cpu


def test_summary_statistics() -> None:
    stats = summarize([1.0, 2.0, 3.0, 10.0], l2_flushed=False)
    assert (stats.median_ms, stats.mean_ms, stats.min_ms, stats.n) == (2.5, 4.0, 1.0, 4)
    assert stats.std_ms > 0


def test_cpu_timing_stops_at_min_reps_when_stable() -> None:
    calls = []

    def fn() -> None:
        calls.append(1)
        time.sleep(0.002)

    opts = TimingOptions(
        warmup_ms=1, min_warmup_calls=3, min_reps=10, max_reps=500, max_time_s=5, target_rse=0.5
    )
    stats = time_cpu(fn, opts)
    assert stats.n == 10
    assert len(calls) == 10 + 3
    assert 1.5 <= stats.median_ms <= 50
    assert not stats.l2_flushed


def test_cpu_timing_respects_time_cap_and_max_reps() -> None:
    opts = TimingOptions(
        warmup_ms=0, min_warmup_calls=1, min_reps=2, max_reps=10_000, max_time_s=0.05, target_rse=0.0
    )
    stats = time_cpu(lambda: time.sleep(0.005), opts)
    assert 2 <= stats.n <= 20
    capped = time_cpu(lambda: None, TimingOptions(min_reps=1, max_reps=7, target_rse=0.0, warmup_ms=0))
    assert capped.n == 7


def test_baseline_cache_round_trip_and_merge(tmp_path: Path) -> None:
    cache = BaselineCache(tmp_path)
    assert cache.load("p", "dev", "2.0") is None
    assert missing(None, want_compile=True) == [EAGER, COMPILE]
    cache.store(BaselineEntry(eager_ms=1.5, device="dev", torch_version="2.0", problem_id="p"))
    entry = cache.load("p", "dev", "2.0")
    assert entry is not None and entry.eager_ms == 1.5 and entry.compile_ms is None
    assert missing(entry, want_compile=False) == []
    assert missing(entry, want_compile=True) == [COMPILE]
    cache.store(BaselineEntry(compile_ms=0.7, device="dev", torch_version="2.0", problem_id="p"))
    merged = cache.load("p", "dev", "2.0")
    assert merged is not None and (merged.eager_ms, merged.compile_ms) == (1.5, 0.7)
    # Keyed by device and torch version.
    assert cache.load("p", "other", "2.0") is None
    assert cache.load("p", "dev", "2.1") is None
