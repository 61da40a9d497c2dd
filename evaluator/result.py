"""The Result: the contract every part of kjudge speaks (DESIGN.md, "The result").

Fields may be added; none may change meaning. The evaluator builds it, the worker stores it,
the API serves it and the CLI prints it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evaluator.profiling.models import Profile


class Verdict(StrEnum):
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    INCORRECT = "incorrect"
    CORRECT = "correct"
    REJECTED = "rejected"


class Status(StrEnum):
    QUEUED = "queued"
    COMPILING = "compiling"
    RUNNING = "running"
    DONE = "done"
    ERROR = "error"


class Language(StrEnum):
    KERNELBENCH = "kernelbench"
    HIP = "hip"
    CUDA = "cuda"
    TRITON = "triton"
    CPP = "cpp"


class Backend(StrEnum):
    ROCM = "rocm"
    CUDA = "cuda"
    CPU = "cpu"


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Target(_Model):
    backend: Backend
    arch: str = Field(description="device architecture: sm_90, gfx942, or the host ISA for cpu")
    device: str = Field(description="the device's marketing name, e.g. 'NVIDIA H100 80GB HBM3'")


class Correctness(_Model):
    trials: int
    passed: int
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    atol: float
    rtol: float
    message: str | None = Field(default=None, description="why the first failing trial failed")


class Timing(_Model):
    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    n: int = Field(description="samples; a batched sample is the mean of calls_per_sample calls")
    l2_flushed: bool
    method: str | None = Field(
        default=None,
        description="per_call_events | cuda_graph | back_to_back_events | host_clock (evaluator/timing.py)",
    )
    launch_overhead_us: float | None = Field(
        default=None, description="host time to launch one call (GPU), apart from the device time"
    )
    contended: bool = Field(
        default=False,
        description="the GPU or host was disturbed during the measurement, also on a retry: treat with care",
    )
    calls_per_sample: int = 1
    checked_calls: int = Field(default=0, description="timed calls whose outputs were checked")


class Baseline(_Model):
    eager_ms: float | None = None
    compile_ms: float | None = None
    contended: bool = Field(
        default=False, description="a baseline was measured on a disturbed host or GPU (never cached)"
    )
    # Re-checks of a cached baseline (evaluator/baselines.py, EvalOptions.baseline_recheck_every).
    torch_version: str | None = Field(
        default=None, description="the PyTorch version the baselines are cached under (with target.device)"
    )
    recheck: str | None = Field(
        default=None,
        description="this evaluation re-measured the cached baselines: agreed | replaced | unconfirmed "
        "(a second re-measurement did not confirm the first) | contended (disturbed: nothing learned)",
    )
    remeasured: bool = Field(
        default=False,
        description="the cached baseline disagreed with two agreeing re-measurements and was replaced; "
        "these values and this result's speedups are the new ones",
    )
    replaced_eager_ms: float | None = Field(default=None, description="the eager baseline that was replaced")
    replaced_compile_ms: float | None = Field(
        default=None, description="the torch.compile baseline that was replaced"
    )
    revised_by: str | None = Field(
        default=None,
        description="set by the service on an earlier stored result: the submission whose re-measured "
        "baseline replaced this one's (replaced_*_ms are this result's old values); speedups recomputed",
    )


class Speedup(_Model):
    vs_eager: float | None = None
    vs_compile: float | None = None


class Logs(_Model):
    compile: str = ""
    run: str = ""


class Roofline(_Model):
    """How close the candidate's median came to what the device allows for this problem."""

    achieved_gbps: float
    achieved_tflops: float
    bound_ms: float = Field(description="max(min bytes / copy bandwidth, FLOPs / peak rate)")
    fraction_of_bound: float = Field(description="bound_ms / median_ms; 1.0 is the roofline")
    limiter: str = Field(description="'memory' or 'compute': which term sets the bound")
    device: str


class Result(_Model):
    id: str | None = None
    problem_id: str
    status: Status = Status.DONE
    verdict: Verdict | None = None
    compiled: bool = False
    correct: bool = False
    correctness: Correctness | None = None
    timing: Timing | None = None
    baseline: Baseline | None = None
    speedup: Speedup | None = None
    roofline: Roofline | None = None
    flags: list[str] = Field(default_factory=list)
    target: Target | None = None
    logs: Logs = Field(default_factory=Logs)
    durations_s: dict[str, float] = Field(
        default_factory=dict,
        description=(
            "wall seconds per phase (docs/internals.md, Child protocol); `total` is the "
            "evaluation's clock. `spare_start` and `spare_import` appear when a spare run child "
            "served the evaluation: spent before the job arrived, so not part of `total`"
        ),
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    message: str | None = Field(default=None, description="one line for the author: what to fix")
    # Profile mode (EvalOptions.profile; evaluator/profiling): only when asked for.
    profile: Profile | None = Field(
        default=None,
        description="hardware profile of the candidate's own kernels after a correct verdict, "
        "or available=false with the reason there is none",
    )
    feedback: str | None = Field(
        default=None,
        description="text for a model's next turn: compile errors at the candidate's lines, the first "
        "mismatch, each flag explained, the speedup and roofline headroom (evaluator/feedback.py)",
    )
