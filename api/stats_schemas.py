"""Response bodies of the dashboard's aggregate endpoints (/v1/stats/...).

Every figure is computed in SQL or from a per-problem list, never from a client-side scan of
submissions, so the dashboard stays fast with 100,000 submissions in the database.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class ProblemName(BaseModel):
    id: str
    name: str


class Facets(BaseModel):
    """The values the submission filters offer (most recent first, capped)."""

    problems: list[ProblemName]
    models: list[str]
    run_ids: list[str]
    languages: list[str]
    targets: list[str]
    verdicts: list[str]


class HistogramBin(BaseModel):
    lo: float = Field(description="lower edge, inclusive")
    hi: float | None = Field(description="upper edge, exclusive; null for the last, open bin")
    count: int


class ProblemStats(BaseModel):
    problem_id: str
    problem_name: str
    submissions: int
    verdicts: dict[str, int] = Field(description="finished submissions by verdict")
    correct: int
    best_speedup: float | None
    speedup_bins: list[HistogramBin] = Field(
        description="speedup vs eager of the correct submissions (reused results counted once)"
    )


class FastPPoint(BaseModel):
    p: float
    fraction: float


class RunStats(BaseModel):
    """One model / run id. A problem counts as attempted once one of its submissions finished."""

    model: str | None
    run_id: str | None
    submissions: int
    finished: int = Field(description="submissions with a verdict")
    pending: int = Field(description="submissions queued, compiling or running")
    correct: int
    correctness_rate: float | None = Field(description="correct / finished submissions")
    verdicts: dict[str, int]
    problems: int = Field(description="problems attempted (with a finished submission)")
    problems_solved: int = Field(description="problems with at least one correct submission")
    fast_p: list[FastPPoint] = Field(
        description="fraction of attempted problems whose best correct submission has speedup vs "
        "eager > p (KernelBench's fast_p; fast_0 is the fraction solved correctly)"
    )


class QueueDepth(BaseModel):
    queue: str
    queued: int
    running: int = Field(description="compiling or running")


class WorkerOut(BaseModel):
    id: str
    queue: str
    status: str
    backend: str | None = None
    arch: str | None = None
    device: str | None = None
    last_seen: datetime
    heartbeat_age_s: float
    current_job: str | None = Field(default=None, description="the submission it is evaluating")
    current_status: str | None = None


class RatePoint(BaseModel):
    minute: datetime
    count: int


class Operations(BaseModel):
    now: datetime
    queues: list[QueueDepth] = Field(description="from the database: submissions not yet finished, per queue")
    workers: list[WorkerOut]
    evaluations_per_minute: list[RatePoint] = Field(
        description="finished submissions per minute over the window, oldest first, zeros included"
    )
    window_minutes: int
