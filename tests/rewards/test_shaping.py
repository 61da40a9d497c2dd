"""Reward shaping (evaluator/reward.py): the ordering of outcomes and the correctness gate."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from evaluator.result import Result, Speedup, Verdict
from evaluator.reward import Outcome, RewardConfig, no_code, shape, speedup_score

CONFIG = RewardConfig()


def _result(verdict: Verdict, speedup: float | None = None, flags: list[str] | None = None) -> Result:
    return Result(
        problem_id="p",
        verdict=verdict,
        speedup=Speedup(vs_eager=speedup) if speedup is not None else None,
        flags=flags or [],
        feedback="fb",
    )


def test_outcomes_are_ordered_and_distinct() -> None:
    scores = {
        v: shape(_result(v), CONFIG).score
        for v in (Verdict.INCORRECT, Verdict.RUNTIME_ERROR, Verdict.COMPILE_ERROR, Verdict.REJECTED)
    }
    slow_correct = shape(_result(Verdict.CORRECT, speedup=0.001), CONFIG).score
    assert slow_correct > scores[Verdict.INCORRECT] > scores[Verdict.RUNTIME_ERROR]
    assert scores[Verdict.RUNTIME_ERROR] > scores[Verdict.COMPILE_ERROR] > no_code(CONFIG).score
    assert no_code(CONFIG).score > scores[Verdict.REJECTED]


def test_speedup_is_log_scaled_and_clipped() -> None:
    assert speedup_score(1.0, CONFIG) == CONFIG.correct_score
    assert speedup_score(2.0, CONFIG) == pytest.approx(CONFIG.correct_score + CONFIG.speedup_weight)
    assert speedup_score(1000.0, CONFIG) == speedup_score(8.0, CONFIG)  # clipped at 2**3
    assert speedup_score(None, CONFIG) == speedup_score(math.nan, CONFIG) == CONFIG.correct_score
    assert shape(_result(Verdict.CORRECT, speedup=4.0), CONFIG).speedup == 4.0


def test_infrastructure_failures_have_no_score() -> None:
    for reward in (
        shape(None, CONFIG, status="error", message="worker lost"),
        shape(_result(Verdict.RUNTIME_ERROR, flags=["problem_error"]), CONFIG),
        shape({"problem_id": "p"}, CONFIG),  # done without a verdict
    ):
        assert reward.score is None and reward.infra_error and reward.outcome is Outcome.INFRA_ERROR
        assert reward.score_or(0.25) == 0.25


def test_a_config_that_breaks_the_correctness_gate_is_refused() -> None:
    with pytest.raises(ValidationError, match="incorrect_score"):
        RewardConfig(speedup_weight=1.0, max_log2_speedup=3.0)
    assert RewardConfig(hack_score=-5).hack_score == -5


def test_adaptor_config_from_the_environment_and_keywords(monkeypatch, caplog) -> None:
    from kjudge.rewards import load_config

    monkeypatch.setenv("KJUDGE_REWARD_CONFIG", '{"hack_score": -2.0, "target": "cpu"}')
    config = load_config(infra_score=0.5, sandbox_fusion_url="http://x")  # verl passes keywords of its own
    assert (config.hack_score, config.target, config.infra_score) == (-2.0, "cpu", 0.5)
    assert "sandbox_fusion_url" in caplog.text
    assert load_config(RewardConfig()).hack_score == CONFIG.hack_score  # an explicit config wins
