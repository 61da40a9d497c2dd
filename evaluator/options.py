"""What a caller hands to `evaluate`: the Submission and the EvalOptions (docs/internals.md)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evaluator.result import Language

Device = Literal["auto", "cpu", "cuda"]


class SubmissionError(ValueError):
    """A submission file that cannot be read as source text (missing, not UTF-8)."""


class Submission(BaseModel):
    """One candidate for one problem. `language=None` means: infer it from `filename`/`source`."""

    model_config = ConfigDict(extra="forbid")

    source: str
    language: Language | None = None
    entry: str = Field(default="forward", description="function a raw-source (cpp/cuda/hip) kernel exports")
    filename: str | None = Field(default=None, description="original file name; used to infer the language")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_file(cls, path: str | Path, language: Language | None = None, **kwargs: Any) -> Submission:
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise SubmissionError(f"cannot read kernel file {path}: {exc.strerror or exc}") from None
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SubmissionError(
                f"kernel file {path} is not UTF-8 text (invalid byte at offset {exc.start}); save it as UTF-8"
            ) from None
        return cls(source=source, language=language, filename=path.name, **kwargs)


class TimingOptions(BaseModel):
    """The adaptive timing protocol (evaluator/timing.py); defaults follow DESIGN.md."""

    model_config = ConfigDict(extra="forbid")

    # GPU clocks ramp up under load: 100 ms of calls before the first sample settles them.
    warmup_ms: float = 100.0
    min_warmup_calls: int = 3
    min_reps: int = 10
    max_reps: int = 1000
    max_time_s: float = 2.0  # measured time cap per timed function
    # Wall-clock cap on the sampling loop, whatever the events measured: work that escapes the
    # events (a side stream) or slow input generation cannot hold a GPU longer than this.
    budget_s: float = Field(default=6.0, gt=0)
    target_rse: float = 0.01  # stop once std/sqrt(n)/mean falls below this
    sync_check_reps: int = 5  # reps timed with a device-wide synchronize to catch escaping work
    # CPU target: other processes using more than this many cores' worth of CPU during a timing
    # mark it contended (evaluator/timing.py, HostLoad). Negative: every CPU timing is contended.
    host_busy_cores: float = 0.5


def default_home() -> Path:
    return Path(os.environ.get("KJUDGE_HOME") or Path.home() / ".kjudge")


class EvalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    device: Device = "auto"
    trials: int = Field(default=5, ge=1)
    seed: int | None = Field(default=None, description="base seed; None draws a fresh one per evaluation")
    timing: TimingOptions = Field(default_factory=TimingOptions)
    measure_timing: bool = True
    baselines: bool = True
    baseline_recheck_every: int = Field(
        default=25,
        ge=0,
        description="re-measure a cached baseline on every Nth evaluation that uses it, and replace it "
        "when two re-measurements agree with each other but not with it (evaluator/baselines.py); 0: never",
    )
    compile_baseline: bool | None = Field(
        default=None, description="time torch.compile(reference); None: only on GPU targets (slow on CPU)"
    )
    run_timeout_s: float = Field(default=300.0, gt=0)
    build_timeout_s: float = Field(default=300.0, gt=0)
    cache_dir: Path | None = Field(default=None, description="default: $KJUDGE_HOME/cache")
    scratch_root: Path | None = Field(default=None, description="where per-evaluation scratch dirs go")
    keep_scratch: bool = False
    # Profile mode (evaluator/profiling): after a correct verdict, profile the candidate's own
    # kernels (ncu / rocprofv3) in a separate sandboxed child. Never changes verdict or timing.
    profile: bool = False
    profile_timeout_s: float = Field(default=300.0, gt=0, description="wall-clock limit of the profiled run")

    def resolved_cache_dir(self) -> Path:
        return (self.cache_dir or default_home() / "cache").expanduser().resolve()
