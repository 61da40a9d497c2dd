"""Queue naming: the API's producer and the workers' consumers must agree on every name."""

from __future__ import annotations

import pytest

from core.queues import (
    UnknownTarget,
    is_known_target,
    normalize_target,
    queue_for_target,
    queues_for_worker,
)


@pytest.mark.parametrize(
    ("target", "queue"),
    [
        (None, "eval.any"),
        ("", "eval.any"),
        ("any", "eval.any"),
        ("cpu", "eval.cpu"),
        ("CUDA", "eval.cuda"),
        ("rocm", "eval.rocm"),
        ("sm_90", "eval.cuda.sm_90"),
        ("sm_100a", "eval.cuda.sm_100a"),
        (" gfx942 ", "eval.hip.gfx942"),
        ("gfx90a", "eval.hip.gfx90a"),
        ("x86_64", "eval.cpu.x86_64"),
    ],
)
def test_queue_for_target(target: str | None, queue: str) -> None:
    assert queue_for_target(target) == queue


@pytest.mark.parametrize("bad", ["nvidia", "sm90", "gfx", "cuda;rm -rf", "h100", "sm_9"])
def test_unknown_targets_say_what_is_accepted(bad: str) -> None:
    with pytest.raises(UnknownTarget, match="use 'any', 'cpu', 'cuda', 'rocm'"):
        queue_for_target(bad)
    assert not is_known_target(bad)


def test_normalize_target() -> None:
    assert normalize_target(None) == "any"
    assert normalize_target("  SM_90 ") == "sm_90"


def test_every_target_reaches_a_worker_that_consumes_it() -> None:
    """For each worker kind, the queues it consumes include the queue of every target it serves."""
    h100 = queues_for_worker("cuda", "sm_90")
    mi300 = queues_for_worker("rocm", "gfx942")
    cpu = queues_for_worker("cpu", "x86_64")
    embedded_cpu = queues_for_worker("cpu", "x86_64", take_any=True)
    assert h100 == ["eval.cuda.sm_90", "eval.cuda", "eval.any"]
    assert mi300 == ["eval.hip.gfx942", "eval.rocm", "eval.any"]
    assert cpu == ["eval.cpu.x86_64", "eval.cpu"]  # 'any' means any GPU in production
    assert "eval.any" in embedded_cpu
    for target, consumers in [
        ("sm_90", h100),
        ("cuda", h100),
        ("any", h100),
        ("gfx942", mi300),
        ("rocm", mi300),
        ("cpu", cpu),
        ("x86_64", cpu),
        ("any", embedded_cpu),
    ]:
        assert queue_for_target(target) in consumers, target
    assert queue_for_target("gfx942") not in h100 and queue_for_target("sm_90") not in mi300


def test_unknown_worker_backend() -> None:
    with pytest.raises(UnknownTarget, match="use cpu, cuda or rocm"):
        queues_for_worker("tpu", "v5")
