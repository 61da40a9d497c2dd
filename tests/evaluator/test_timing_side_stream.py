"""The timer's side-stream rule (evaluator/timing.py, _side_stream_check) on scripted clocks: no
GPU needed to check what it decides. A synchronized call far slower than its event time names a
side stream only if it outlasts the control op's host overhead in every moment compared."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from evaluator import timing
from evaluator.options import TimingOptions


class _Subject:
    def fresh(self) -> tuple[int, list[Any]]:
        return 0, []

    def call(self, inputs: list[Any]) -> None:
        return None


def _decide(
    monkeypatch: pytest.MonkeyPatch, candidate_ms: list[float], control_ms: list[float]
) -> tuple[list[str], bool]:
    """Graph-timed at 3 us; the synchronized candidate and control calls take the scripted times
    in turn, the control's event time 0.05 ms."""
    candidate: Iterator[float] = itertools.cycle(candidate_ms)
    control: Iterator[float] = itertools.cycle(control_ms)

    def synchronized(fn: Any, flush: Any) -> float:
        return next(control) if fn is _flush else next(candidate)

    monkeypatch.setattr(timing, "_synchronized_ms", synchronized)
    monkeypatch.setattr(timing, "_event_ms", lambda fn: 0.05)
    stats = timing.summarize([0.003] * 20, l2_flushed=True)
    stats.launch_overhead_us = 10.0
    out = timing._side_stream_check(_Subject(), TimingOptions(), _flush, stats)  # type: ignore[arg-type]
    return out.flags, out.contended


def _flush() -> None:
    return None


def test_contention_that_comes_and_goes_is_not_a_side_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    # Another process time-slices the GPU in most moments, not in one: that moment decides.
    busy = [0.6, 0.7, 0.02, 0.65, 0.59, 0.8, 0.61, 0.66, 0.7]
    control = [0.07, 0.09, 0.06, 0.08, 0.1, 0.07, 0.06, 0.09, 0.08]
    # Not a side stream, but a shared GPU: the timing says it was disturbed (and is repeated).
    assert _decide(monkeypatch, busy, control) == ([], True)


def test_work_that_escapes_every_moment_is_a_side_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1 ms of side-stream work in every synchronized call; the control adds ~0.03 ms.
    assert _decide(monkeypatch, [1.0, 1.1, 1.05], [0.08, 0.09, 0.07]) == ([timing.SIDE_STREAM_WORK], False)


def test_contention_everywhere_matched_by_the_control_is_not_a_side_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Sustained contention slows the control as much as the candidate in the same moments.
    assert _decide(monkeypatch, [0.6, 0.62, 0.58], [0.65, 0.6, 0.63]) == ([], True)


def test_a_quiet_call_is_neither(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _decide(monkeypatch, [0.03, 0.035, 0.032], [0.08, 0.09, 0.07]) == ([], False)
