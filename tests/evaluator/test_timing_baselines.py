from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from evaluator.baselines import COMPILE, EAGER, BaselineCache, BaselineEntry, missing
from evaluator.options import TimingOptions
from evaluator.timing import (
    HOST_BUSY_CORES,
    TIMED_OUTPUT_MISMATCH,
    Checker,
    HostLoad,
    Subject,
    summarize,
    time_cpu,
    time_subject,
)


def test_summary_statistics() -> None:
    stats = summarize([1.0, 2.0, 3.0, 10.0], l2_flushed=False)
    assert (stats.median_ms, stats.mean_ms, stats.min_ms, stats.n) == (2.5, 4.0, 1.0, 4)
    assert stats.std_ms > 0


def _subject(fn: Callable[[], object], check: Callable[[int, object], str | None] | None = None) -> Subject:
    """A subject whose inputs are just a counter: enough to see which calls were checked."""
    seeds = iter(range(1_000_000))

    def fresh() -> tuple[int, list[object]]:
        seed = next(seeds)
        return seed, [seed]

    return Subject(call=lambda inputs: (fn(), inputs[0])[1], fresh=fresh, check=check)


def test_cpu_timing_stops_at_min_reps_when_stable() -> None:
    calls = []

    def fn() -> None:
        calls.append(1)
        time.sleep(0.002)

    opts = TimingOptions(
        warmup_ms=1, min_warmup_calls=3, min_reps=10, max_reps=500, max_time_s=5, target_rse=0.5
    )
    stats = time_cpu(_subject(fn), opts)
    assert stats.n == 10
    # 3 warm-up calls + 10 samples; twice when the rest of the host was busy meanwhile (repeated).
    assert len(calls) in (13, 26)
    assert 1.5 <= stats.median_ms <= 50
    assert not stats.l2_flushed
    assert stats.method == "host_clock"


def test_cpu_timing_respects_time_cap_budget_and_max_reps() -> None:
    opts = TimingOptions(
        warmup_ms=0, min_warmup_calls=1, min_reps=2, max_reps=10_000, max_time_s=0.05, target_rse=0.0
    )
    stats = time_cpu(_subject(lambda: time.sleep(0.005)), opts)
    assert 2 <= stats.n <= 20
    capped = time_cpu(
        _subject(lambda: None), TimingOptions(min_reps=1, max_reps=7, target_rse=0.0, warmup_ms=0)
    )
    assert capped.n == 7
    # The wall-clock budget stops a loop whose measured times stay tiny (work the clock misses).
    budget = TimingOptions(
        warmup_ms=0, min_reps=2, max_reps=10_000, max_time_s=100, target_rse=0.0, budget_s=0.2
    )
    started = time.monotonic()
    time_cpu(_subject(lambda: time.sleep(0.01)), budget)
    assert time.monotonic() - started < 5 * 0.2 + 1.0


def test_every_call_may_be_checked_and_a_wrong_one_ends_timing() -> None:
    checked: list[int] = []

    def check(seed: int, out: object) -> str | None:
        checked.append(seed)
        return None if out == seed else f"call on seed {seed} returned {out}"

    opts = TimingOptions(warmup_ms=0, min_warmup_calls=3, min_reps=50, max_reps=200, target_rse=0.0)
    honest = time_subject(_subject(lambda: None, check), opts, "cpu")
    assert honest.flags == [] and honest.checked_calls == len(checked) >= 1
    assert checked == sorted(set(checked)), "each check is for the call just made"

    calls = {"n": 0}

    def lazy_after(inputs: list[object]) -> object:
        calls["n"] += 1
        return inputs[0] if calls["n"] <= 10 else -1  # right while "correctness" lasts

    seeds = iter(range(1_000_000))
    subject = Subject(call=lazy_after, fresh=lambda: (s := next(seeds), [s]), check=check)
    caught = time_subject(subject, opts, "cpu")
    assert caught.flags == [TIMED_OUTPUT_MISMATCH]
    assert caught.n == 0 and caught.mismatch and "returned -1" in caught.mismatch


def test_checks_are_drawn_after_the_call_and_scale_with_the_number_of_calls() -> None:
    checker = Checker(_subject(lambda: None, lambda s, o: None))
    checker.expect_calls(20)
    assert checker.probability == 12 / 20
    checker.expect_calls(10_000)
    assert checker.probability == 1 / 8
    checker.expect_calls(3)
    assert checker.probability == 1.0


def test_host_load_sees_another_busy_process() -> None:
    import multiprocessing

    load = HostLoad()
    time.sleep(0.3)
    quiet = load.others_cores()
    stop = multiprocessing.Event()
    spinner = multiprocessing.Process(target=_spin, args=(stop,))
    spinner.start()
    try:
        load = HostLoad()
        time.sleep(0.5)
        busy = load.others_cores()
    finally:
        stop.set()
        spinner.join()
    # A spinning process is more than the threshold that marks a CPU timing as contended.
    assert busy > HOST_BUSY_CORES, (quiet, busy)


def _spin(stop: object) -> None:
    while not stop.is_set():  # type: ignore[attr-defined]
        pass


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


# -- a baseline measured on a busy host ------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
LEGIT = REPO / "tests" / "adversarial" / "submissions" / "legit.py"
SMALL_RELU = REPO / "tests" / "adversarial" / "problem_relu.py"


def test_a_baseline_measured_on_a_loaded_host_is_flagged_and_never_cached(tmp_path: Path) -> None:
    """The poisoned-baseline case (issue 13): eager measured while other work ran on the host
    must not become the problem's cached yardstick."""
    import multiprocessing
    import os

    from evaluator.api import evaluate
    from evaluator.baselines import installed_torch_version
    from evaluator.options import EvalOptions, Submission
    from evaluator.problem import Problem
    from evaluator.result import Verdict

    problem = Problem.from_file(SMALL_RELU)
    options = EvalOptions(
        device="cpu",
        trials=1,
        timing=TimingOptions(warmup_ms=5, min_reps=10, max_time_s=0.3, budget_s=2.0),
        run_timeout_s=120,
        cache_dir=tmp_path / "cache",
    )
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,)) for _ in range(os.cpu_count() or 2)]
    for spinner in spinners:
        spinner.start()
    try:
        loaded = evaluate(problem, Submission.from_file(LEGIT), options)
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()
    assert loaded.verdict == Verdict.CORRECT, (loaded.message, loaded.logs.run[-2000:])
    assert loaded.baseline is not None and loaded.baseline.eager_ms
    assert loaded.baseline.contended, "eager timed beside spinning processes must be flagged"
    assert loaded.target is not None
    cache = BaselineCache(tmp_path / "cache")
    assert cache.load(problem.id, loaded.target.device, installed_torch_version() or "unknown") is None
