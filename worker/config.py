"""Worker-only settings and the identity of one worker process.

Shared service settings (database, broker, reconciler deadlines, max attempts) live in
`core.settings.Settings`; what only a worker process needs lives here, under `KJUDGE_WORKER_`.
The launcher sets the identity fields (backend, arch, device, gpu) in each child's environment.
"""

from __future__ import annotations

import socket
from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from core.settings import TaskLimits
from worker.devices import host_isa

# The exit status of a worker that drained (`kjudge drain`): its launcher leaves it stopped.
DRAINED_EXIT = 79


class WorkerSettings(TaskLimits):
    """Also the Celery time limits (soft_time_limit_s, hard_time_limit_s): core.settings.TaskLimits,
    which the API's publisher reads too, so both configure their Celery app alike."""

    model_config = SettingsConfigDict(env_prefix="KJUDGE_WORKER_", extra="ignore")

    # Identity (set per child by worker.launcher; defaults describe a plain CPU worker).
    host: str = Field(
        default_factory=socket.gethostname,
        description="host part of the worker id; in Kubernetes the pod name (the default) or node name",
    )
    backend: str = Field(default="cpu", description="cpu, cuda or rocm")
    arch: str = Field(default_factory=host_isa, description="sm_90, gfx942, x86_64 ...")
    device_name: str = Field(default="", description="marketing name of the device")
    gpu: str | None = Field(default=None, description="physical GPU index this process is pinned to")
    take_any: bool = Field(default=False, description="also consume eval.any (GPU workers always do)")
    queues: str | None = Field(default=None, description="comma-separated queues overriding routing")

    # The pipeline (worker/pipeline.py): `compile` builds ahead on the host-wide pool and hands
    # jobs to the run stages; `run` takes them over on one device; `all` does both in one task.
    stage: Literal["all", "compile", "run"] = "all"
    stage_targets: str | None = Field(default=None, description="compile stage: JSON list of StageTarget")
    handoff_poll_s: float = 0.5  # how often a built job's compile slot looks whether it was taken
    # A built job whose run message never arrives (the broker lost it) stops being kept alive
    # after this; its lease then expires and the reconciler sends it round again.
    handoff_timeout_s: float = 1200.0  # below the soft time limit, less a build
    # Spare run children (evaluator/spares.py) kept importing ahead of the jobs, and the cores
    # they import on (the launcher gives a run stage the compile cores: never its own).
    spares: int = Field(default=1, ge=1, description="spare run children kept ready")
    spare_cpus: str | None = Field(default=None, description="cores spares import on, e.g. 0-13")

    # Background loops in the worker's main process.
    heartbeat_interval_s: float = 10.0
    reconcile_interval_s: float = 10.0
    reconcile_batch: int = 500

    # Backoff between retries of kjudge's own failures: base * 2**(attempt-1) seconds.
    retry_backoff_s: float = 5.0

    @property
    def worker_id(self) -> str:
        """host:gpu (or host:cpu, host:compile for the pool); the `workers` table's key."""
        if self.stage == "compile":
            return f"{self.host}:compile"
        return f"{self.host}:{self.gpu if self.gpu is not None else 'cpu'}"

    @property
    def eval_device(self) -> str:
        """The torch device the evaluator uses; a pinned GPU is always device 0 of its process."""
        return "cpu" if self.backend == "cpu" else "cuda"


@lru_cache(maxsize=1)
def get_worker_settings() -> WorkerSettings:
    return WorkerSettings()
