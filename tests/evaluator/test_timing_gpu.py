"""The GPU timer's own devices: the clock ramp before sampling and the graph batches' placements."""

from __future__ import annotations

import pytest
import torch

from evaluator.options import TimingOptions
from evaluator.timing import METHOD_GRAPH, PLACEMENTS, Checker, ClockKeeper, Subject, _GraphBatch, time_gpu

pytestmark = pytest.mark.gpu


def _relu_subject(shape: tuple[int, ...] = (16, 16384)) -> Subject:
    seeds = iter(range(1_000_000))

    def fresh() -> tuple[int, list[torch.Tensor]]:
        seed = next(seeds)
        generator = torch.Generator(device="cuda").manual_seed(seed)
        return seed, [torch.randn(shape, device="cuda", generator=generator)]

    def check(seed: int, out: torch.Tensor) -> str | None:
        generator = torch.Generator(device="cuda").manual_seed(seed)
        want = torch.relu(torch.randn(shape, device="cuda", generator=generator))
        return None if torch.equal(out, want) else "wrong"

    return Subject(call=lambda inputs: torch.relu(inputs[0]), fresh=fresh, check=check)


def test_the_ramp_ends_with_the_clock_up() -> None:
    clocks = ClockKeeper()
    spun = clocks.ramp()
    assert ClockKeeper.RAMP_MIN_MS <= spun <= ClockKeeper.RAMP_MAX_MS + ClockKeeper.RAMP_CHUNK_MS * 2
    # Busy right after the ramp: the clock it found is the clock the SMs run at.
    rate = ClockKeeper._rate(int(clocks.cycles_per_ms * 5))
    assert rate == pytest.approx(clocks.cycles_per_ms, rel=0.05)


def test_placements_differ_in_where_inputs_and_outputs_sit() -> None:
    subject = _relu_subject()
    batches = _GraphBatch.capture_placements(subject, 8, Checker(subject), PLACEMENTS)
    assert len(batches) == PLACEMENTS
    two_mb = 2 << 20
    input_offsets = {b.inputs[0][0].data_ptr() % two_mb for b in batches}
    output_offsets = {b.outputs[0].data_ptr() % two_mb for b in batches}
    assert len(input_offsets) > 1 and len(output_offsets) > 1, (input_offsets, output_offsets)


def test_a_tiny_kernel_is_timed_over_whole_rounds_of_placements() -> None:
    stats = time_gpu(_relu_subject(), TimingOptions())
    assert stats.method == METHOD_GRAPH and stats.n % PLACEMENTS == 0 and stats.calls_per_sample >= 8
    assert not stats.flags and stats.checked_calls > 0 and 0 < stats.median_ms < 0.05, stats
