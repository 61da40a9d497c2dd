"""Request and response bodies of the HTTP API (pydantic v2).

Import-light on purpose (pydantic + evaluator.result only, no FastAPI, no SQLAlchemy): the
client SDK parses responses with these same models.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evaluator.result import Result

_ENTRY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class _In(BaseModel):
    # Unknown fields are an error: a misspelt `targte` must not silently run on the default.
    model_config = ConfigDict(extra="forbid")


class SubmissionCreate(_In):
    problem_id: str = Field(min_length=1, max_length=200, description="problem id (sha256) or name")
    language: str = Field(min_length=1, max_length=32, description="kernelbench|hip|cuda|triton|cpp")
    source: str = Field(description="the candidate's source (at most 1 MiB)")
    entry: str | None = Field(default=None, max_length=200, pattern=_ENTRY_PATTERN)
    target: str | None = Field(
        default=None, max_length=64, description="cpu, cuda, rocm, an arch (sm_90, gfx942) or any (default)"
    )
    metadata: dict[str, Any] = Field(default_factory=dict, description="model, run_id, rollout_id, tags ...")
    reuse: bool = Field(
        default=False,
        description="return the stored result of an identical (problem, language, source, target) "
        "submission instead of evaluating again",
    )
    profile: bool = Field(
        default=False,
        description="after a correct verdict, add a hardware profile of the candidate's own kernels "
        "(result.profile: per kernel DRAM/SM throughput, occupancy, registers, stalls, and a "
        "bottleneck line); costs extra evaluation time, never changes verdict or timing",
    )


class BatchItem(SubmissionCreate):
    client_request_id: str | None = Field(
        default=None, min_length=1, max_length=200, description="idempotency key of this item"
    )


class BatchCreate(_In):
    submissions: list[BatchItem] = Field(description="at most 1,000 submissions")


class SubmissionAccepted(BaseModel):
    id: str
    status: str
    verdict: str | None = None
    reused_from: str | None = None
    replayed: bool = Field(default=False, description="true when an idempotency key matched an earlier POST")
    result: dict[str, Any] | None = Field(
        default=None,
        description="the reused Result, when `reuse` found one (status done at once) and the POST asked "
        "?include_result=true: no GET needed",
    )


class BatchAccepted(BaseModel):
    id: str
    count: int
    submissions: list[SubmissionAccepted]


class SubmissionOut(BaseModel):
    id: str
    problem_id: str
    language: str
    entry: str | None = None
    target: str
    queue: str
    status: str
    verdict: str | None = None
    message: str | None = None
    attempts: int = 0
    worker: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    batch_id: str | None = None
    reused_from: str | None = None
    profile: bool = Field(default=False, description="a hardware profile was asked for")
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    speedup_vs_eager: float | None = None
    median_ms: float | None = None
    source: str | None = Field(default=None, description="only with ?include_source=true")
    # Left to right: a stored result is read as a Result (the SDK's `sub.result.profile`); smart
    # mode took the plain dict for every one, as the exact match for JSON. The dict is for a
    # result stored by an older kjudge that today's Result no longer reads.
    result: Result | dict[str, Any] | None = Field(
        default=None, union_mode="left_to_right", description="the evaluator's Result once done"
    )


class SubmissionPage(BaseModel):
    items: list[SubmissionOut]
    next_cursor: str | None = Field(default=None, description="pass as ?cursor= for the next page")


class BatchOut(BaseModel):
    id: str
    count: int
    created_at: datetime
    done: bool = Field(description="every submission reached done or error")
    status_counts: dict[str, int]
    verdict_counts: dict[str, int]
    submissions: list[SubmissionOut]


class ProblemCreate(_In):
    name: str = Field(min_length=1, max_length=200)
    source: str = Field(min_length=1, description="KernelBench format: Model, get_inputs, get_init_inputs")
    level: int | None = None
    tags: list[str] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)


class BaselineOut(BaseModel):
    device: str
    torch_version: str
    eager_ms: float | None = None
    compile_ms: float | None = None
    measured_at: datetime


class ProblemBrief(BaseModel):
    id: str
    name: str
    level: int | None = None
    tags: list[str] = Field(default_factory=list)
    created_at: datetime


class ProblemOut(ProblemBrief):
    source: str
    settings: dict[str, Any] = Field(default_factory=dict)
    roofline: dict[str, Any] = Field(default_factory=dict)
    baselines: list[BaselineOut] = Field(default_factory=list)


class ProblemPage(BaseModel):
    items: list[ProblemBrief]
    next_offset: int | None = None


class LeaderboardEntry(BaseModel):
    rank: int
    problem_id: str
    problem_name: str
    model: str | None
    submission_id: str
    target: str
    speedup_vs_eager: float | None
    median_ms: float | None
    created_at: datetime


class Leaderboard(BaseModel):
    entries: list[LeaderboardEntry]


class ErrorDetail(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorBody(BaseModel):
    error: ErrorDetail


class WorkerInfo(BaseModel):
    """One evaluation worker, as the registry knows it (`kjudge workers`)."""

    id: str = Field(description="host:gpu (or host:cpu)")
    host: str
    gpu: str | None
    target: dict[str, Any] = Field(description="backend, arch, device")
    queues: list[str]
    status: str = Field(description="idle | busy | draining | offline")
    current_job: str | None = Field(description="the submission it evaluates now")
    job_age_s: float | None
    heartbeat_age_s: float
    evaluations: int = Field(description="verdicts stored since this worker started")
    busy_s: float
    uptime_s: float | None
    busy_ratio: float | None = Field(description="busy_s / uptime_s")
    drain: bool = Field(description="a drain was requested: it finishes its job and exits")
    stats: dict[str, Any]


class WorkerList(BaseModel):
    workers: list[WorkerInfo]


class DrainAccepted(BaseModel):
    id: str
    status: str
