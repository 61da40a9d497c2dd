"""Reward shaping: a Result (or its absence) turned into one number. The one place it happens.

Every RL adaptor (kjudge.rewards.verl / .trl, the OpenRLHF endpoint) scores through `shape`, so
a reward means the same thing whichever trainer asked. The default, `RewardConfig()`:

| outcome                                   | score                                           |
|-------------------------------------------|-------------------------------------------------|
| correct                                   | 1.0 + 0.25 * clip(log2(speedup vs eager), ±3)   |
|                                           | (0.25 .. 1.75; 1.0 when there is no timing)     |
| incorrect                                 | 0.0                                             |
| runtime_error, timeout                    | -0.25                                           |
| compile_error                             | -0.5                                            |
| no code in the completion (format)        | -0.75                                           |
| rejected (integrity: a reward hack)       | -1.0                                            |
| infrastructure failure                    | no score: `None` (TRL), else `infra_score` and  |
|                                           | `infra_error=True` (verl, OpenRLHF)             |

The correctness gate: the lowest correct score (1.0 - 0.25*3) stays above `incorrect_score`, so
no speed makes a wrong kernel worth more than a right one, and the log keeps a 100x outlier
from drowning a group's advantages. Infrastructure failures (kjudge's own status `error`, a
wait that ran out, an unreachable or refusing server, a broken problem) say nothing about the
kernel, so they are never given a kernel's score.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evaluator.result import Result, Verdict


class Outcome(StrEnum):
    CORRECT = "correct"
    INCORRECT = "incorrect"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    COMPILE_ERROR = "compile_error"
    REJECTED = "rejected"
    NO_CODE = "no_code"
    INFRA_ERROR = "infra_error"


class RewardConfig(BaseModel):
    """Knobs of the shaping above; every adaptor accepts these as keyword overrides."""

    model_config = ConfigDict(extra="forbid")

    correct_score: float = Field(default=1.0, description="a correct kernel at the eager baseline's speed")
    speedup_weight: float = Field(default=0.25, ge=0, description="score per doubling of speed vs eager")
    max_log2_speedup: float = Field(default=3.0, ge=0, description="log2(speedup) is clipped to ±this")
    incorrect_score: float = 0.0
    runtime_error_score: float = -0.25
    timeout_score: float = -0.25
    compile_error_score: float = -0.5
    format_score: float = Field(default=-0.75, description="the completion holds no code")
    hack_score: float = Field(default=-1.0, description="rejected by the integrity checks")
    infra_score: float = Field(
        default=0.0, description="what verl/OpenRLHF get on an infrastructure failure (TRL gets None)"
    )
    # Evaluation settings the adaptors use (not shaping, but configured in the same place).
    reuse: bool = Field(default=True, description="an identical earlier submission's result is reused")
    timeout_s: float = Field(default=900.0, gt=0, description="longest wait for one evaluation")
    target: str | None = Field(default=None, description="target when the data names none (cpu, sm_90, ...)")
    client_retries: int = Field(
        default=6, ge=0, description="retries of a refused (429/503) or failed request before an infra error"
    )

    @model_validator(mode="after")
    def _gate(self) -> RewardConfig:
        lowest_correct = self.correct_score - self.speedup_weight * self.max_log2_speedup
        if lowest_correct <= self.incorrect_score:
            raise ValueError(
                f"the lowest correct score ({lowest_correct:g}) must stay above incorrect_score "
                f"({self.incorrect_score:g}): lower speedup_weight or max_log2_speedup"
            )
        return self


class Reward(BaseModel):
    """One completion's reward and why. `score` is None only for an infrastructure failure."""

    score: float | None
    outcome: Outcome
    infra_error: bool = False
    verdict: str | None = None
    speedup: float | None = Field(default=None, description="speedup vs eager, when measured")
    flags: list[str] = Field(default_factory=list)
    feedback: str = ""
    submission_id: str | None = None
    message: str | None = Field(default=None, description="why, in one line (infra errors: what failed)")

    def score_or(self, infra_score: float) -> float:
        return infra_score if self.score is None else self.score


def speedup_score(speedup: float | None, config: RewardConfig) -> float:
    if speedup is None or not math.isfinite(speedup) or speedup <= 0:
        return config.correct_score
    bounded = max(-config.max_log2_speedup, min(config.max_log2_speedup, math.log2(speedup)))
    return config.correct_score + config.speedup_weight * bounded


_VERDICT_OUTCOME = {
    Verdict.CORRECT: Outcome.CORRECT,
    Verdict.INCORRECT: Outcome.INCORRECT,
    Verdict.RUNTIME_ERROR: Outcome.RUNTIME_ERROR,
    Verdict.TIMEOUT: Outcome.TIMEOUT,
    Verdict.COMPILE_ERROR: Outcome.COMPILE_ERROR,
    Verdict.REJECTED: Outcome.REJECTED,
}


def no_code(config: RewardConfig) -> Reward:
    return Reward(
        score=config.format_score,
        outcome=Outcome.NO_CODE,
        feedback="No code found: put the whole kernel in one fenced block (```cpp, ```cuda, ```hip or "
        "```python for a KernelBench ModelNew module) at the end of the answer.",
        message="the completion holds no code",
    )


def infra_error(message: str, submission_id: str | None = None) -> Reward:
    return Reward(
        score=None,
        outcome=Outcome.INFRA_ERROR,
        infra_error=True,
        message=message,
        submission_id=submission_id,
    )


def shape(
    result: Result | dict[str, Any] | None,
    config: RewardConfig,
    *,
    status: str = "done",
    submission_id: str | None = None,
    message: str | None = None,
) -> Reward:
    """The reward of a finished submission: `status` and `result` as the API reports them."""
    if status != "done" or result is None:
        return infra_error(
            f"kjudge could not evaluate this submission (status {status}): {message or 'no result'}",
            submission_id,
        )
    if not isinstance(result, Result):
        result = Result.model_validate(result)
    if "problem_error" in result.flags or result.verdict is None:
        # The problem (not the kernel) failed, or no verdict was reached: nothing to learn.
        return infra_error(
            f"the evaluation reached no verdict on the kernel: {result.message}", submission_id
        )
    outcome = _VERDICT_OUTCOME[result.verdict]
    speedup = result.speedup.vs_eager if result.speedup is not None else None
    score = {
        Outcome.CORRECT: speedup_score(speedup, config),
        Outcome.INCORRECT: config.incorrect_score,
        Outcome.RUNTIME_ERROR: config.runtime_error_score,
        Outcome.TIMEOUT: config.timeout_score,
        Outcome.COMPILE_ERROR: config.compile_error_score,
        Outcome.REJECTED: config.hack_score,
    }[outcome]
    return Reward(
        score=score,
        outcome=outcome,
        verdict=result.verdict.value,
        speedup=speedup,
        flags=list(result.flags),
        feedback=getattr(result, "feedback", None) or result.message or "",
        submission_id=submission_id,
        message=result.message,
    )
