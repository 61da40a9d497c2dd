"""Timing a callable the same way for candidates and baselines (DESIGN.md, measurement rules).

Modelled on triton.testing.do_bench: warm up by time, flush L2 before every repetition by
writing a buffer larger than L2, bracket each call with device events, and repeat until the
relative standard error of the mean is small or a time cap is hit; report the median.

Events only see the current stream. A few extra repetitions are therefore timed with a
device-wide synchronize and the host clock; if those are much slower than the event times, work
escaped the events (a side stream or a thread) and that synchronized timing is reported instead,
with the flag `side_stream_work`. A device busy with another process's work slows every
synchronized call, so the gap must also outlast that of a control op measured alongside.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from evaluator.options import TimingOptions

SIDE_STREAM_WORK = "side_stream_work"
DEFAULT_L2_BYTES = 256 << 20
# Synchronized host time includes launch and synchronize overhead (~10-50 us); only a gap well
# beyond that means device work the events did not bracket.
SYNC_GAP_RATIO = 1.5
SYNC_GAP_MS = 0.1


@dataclass
class TimingStats:
    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    n: int
    l2_flushed: bool
    flags: list[str] = field(default_factory=list)
    sync_median_ms: float | None = None

    def as_result(self) -> dict[str, Any]:
        return {
            "median_ms": self.median_ms,
            "mean_ms": self.mean_ms,
            "std_ms": self.std_ms,
            "min_ms": self.min_ms,
            "n": self.n,
            "l2_flushed": self.l2_flushed,
            **({"sync_median_ms": self.sync_median_ms} if self.sync_median_ms is not None else {}),
        }


def summarize(times_ms: list[float], l2_flushed: bool) -> TimingStats:
    return TimingStats(
        median_ms=statistics.median(times_ms),
        mean_ms=statistics.fmean(times_ms),
        std_ms=statistics.stdev(times_ms) if len(times_ms) > 1 else 0.0,
        min_ms=min(times_ms),
        n=len(times_ms),
        l2_flushed=l2_flushed,
    )


def _relative_standard_error(times_ms: list[float]) -> float:
    if len(times_ms) < 2:
        return math.inf
    mean = statistics.fmean(times_ms)
    if mean <= 0:
        return 0.0
    return statistics.stdev(times_ms) / math.sqrt(len(times_ms)) / mean


def _done(times_ms: list[float], opts: TimingOptions) -> bool:
    if len(times_ms) >= opts.max_reps:
        return True
    if len(times_ms) < opts.min_reps:
        return False
    return sum(times_ms) / 1000.0 >= opts.max_time_s or _relative_standard_error(times_ms) < opts.target_rse


def _warm_up(fn: Callable[[], Any], opts: TimingOptions, sync: Callable[[], None]) -> float:
    """Run fn until warmup_ms has passed and at least min_warmup_calls calls; returns ms per call."""
    calls = 0
    start = time.perf_counter()
    while True:
        fn()
        sync()
        calls += 1
        elapsed_ms = (time.perf_counter() - start) * 1000.0
        if calls >= opts.min_warmup_calls and elapsed_ms >= opts.warmup_ms:
            return elapsed_ms / calls


def time_cpu(fn: Callable[[], Any], opts: TimingOptions) -> TimingStats:
    """Host clock around each call (no L2 flush: a CPU cache flush would dominate small kernels)."""
    _warm_up(fn, opts, lambda: None)
    times: list[float] = []
    while not _done(times, opts):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return summarize(times, l2_flushed=False)


class L2Flusher:
    """A buffer twice the L2 size; zeroing it evicts everything the previous call left in L2."""

    def __init__(self, device: torch.device) -> None:
        try:
            l2 = int(torch.cuda.get_device_properties(device).L2_cache_size) or DEFAULT_L2_BYTES
        except (AttributeError, RuntimeError):
            l2 = DEFAULT_L2_BYTES
        self.buffer = torch.empty(2 * l2, dtype=torch.int8, device=device)

    def __call__(self) -> None:
        self.buffer.zero_()


def time_gpu(fn: Callable[[], Any], opts: TimingOptions, device: torch.device | str = "cuda") -> TimingStats:
    device = torch.device(device)
    flush = L2Flusher(device)
    per_call_ms = _warm_up(fn, opts, torch.cuda.synchronize)
    # Size batches so a batch is ~50 ms: fewer host syncs, still a responsive stopping rule.
    batch = max(1, min(opts.max_reps, int(50.0 / max(per_call_ms, 1e-3))))
    times: list[float] = []
    while not _done(times, opts):
        n = min(batch, opts.max_reps - len(times))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        for i in range(n):
            flush()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        times.extend(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))
    stats = summarize(times, l2_flushed=True)

    sync_times = [_synchronized_ms(fn, flush) for _ in range(opts.sync_check_reps)]
    if not sync_times:
        return stats
    sync_median = statistics.median(sync_times)
    stats.sync_median_ms = sync_median
    if _escaped(sync_median, stats.median_ms):
        # Another process's kernels time-sliced with ours slow the host clock around any call,
        # not just this one: a flag stands only if the gap outlasts that of a control op (our own
        # flush) timed both ways, interleaved with the candidate.
        sync_times, overhead_ms = _against_control(fn, flush, opts.sync_check_reps)
        sync_median = statistics.median(sync_times)
        if _escaped(sync_median - overhead_ms, stats.median_ms):
            # Report what the device really spent; the flag tells the reader why.
            sync_stats = summarize(sync_times, l2_flushed=True)
            sync_stats.flags = [SIDE_STREAM_WORK]
            sync_stats.sync_median_ms = sync_median
            return sync_stats
    return stats


def _escaped(sync_ms: float, event_ms: float) -> bool:
    return sync_ms > SYNC_GAP_RATIO * event_ms + SYNC_GAP_MS


def _synchronized_ms(fn: Callable[[], Any], flush: Callable[[], None]) -> float:
    flush()
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1000.0


def _event_ms(fn: Callable[[], Any]) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def _against_control(
    fn: Callable[[], Any], flush: Callable[[], None], reps: int
) -> tuple[list[float], float]:
    """Synchronized times of fn, and how much longer the host clock than the events saw a control
    op that cannot escape its stream, measured in the same moments."""
    candidate: list[float] = []
    control_sync: list[float] = []
    control_event: list[float] = []
    for _ in range(max(reps, 5)):
        candidate.append(_synchronized_ms(fn, flush))
        control_sync.append(_synchronized_ms(flush, lambda: None))
        control_event.append(_event_ms(flush))
    overhead = statistics.median(control_sync) - statistics.median(control_event)
    return candidate, max(0.0, overhead)


def time_callable(fn: Callable[[], Any], opts: TimingOptions, device: str) -> TimingStats:
    if device == "cpu":
        return time_cpu(fn, opts)
    return time_gpu(fn, opts, device)
