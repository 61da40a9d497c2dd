"""The service's settings: one pydantic-settings class shared by api/, worker/ and db/.

Every field reads `KJUDGE_<NAME>` from the environment. With nothing set, kjudge runs on the
embedded default (SQLite + kombu's filesystem broker under KJUDGE_HOME, no external servers);
KJUDGE_DATABASE_URL / KJUDGE_BROKER_URL switch to PostgreSQL / Redis.

TaskLimits, the Celery time limits under `KJUDGE_WORKER_`, is here too: the workers run under
them and the API's Celery app (core.celery_config) is configured with them as well.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KJUDGE_", extra="ignore")

    home: Path = Field(default=Path("~/.kjudge"), description="state of the embedded default")
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; default: SQLite in home")
    broker_url: str | None = Field(default=None, description="Celery broker; default: filesystem in home")
    redis_url: str | None = Field(
        default=None, description="Redis for rate limits; default: the broker when it is Redis"
    )

    # Auth. Without keys the API answers loopback clients only (the embedded default).
    api_keys_required: bool = False
    default_rate_limit_per_min: int = 600
    anonymous_rate_limit_per_min: int | None = None
    api_key_cache_s: float = 5.0  # a revoked key is refused at most this much later

    # Input limits.
    max_source_bytes: int = 1 << 20
    max_batch_items: int = 1000
    max_body_bytes: int = 64 << 20
    long_poll_max_s: float = 60.0

    # Backpressure (api/backpressure.py): a POST that would make a target's queue (its `queued`
    # submissions) deeper than this is refused whole with 429 and Retry-After. None: no limit.
    max_queue_depth: int | None = Field(default=5000, ge=1)
    queue_depth_cache_s: float = 1.0  # the depth is re-read at most this often per API process
    queue_retry_after_s: int = Field(default=5, ge=1)

    # RL rewards (POST /v1/rewards/openrlhf): RewardConfig fields (evaluator/reward.py) as JSON,
    # the same variable the client-side adaptors read; and how long one request may wait for its
    # evaluations (OpenRLHF gives a remote reward request 180 s).
    reward_config: dict[str, Any] = Field(default_factory=dict)
    reward_wait_s: float = Field(default=170.0, gt=0)

    # Database pool (per API process).
    db_pool_size: int = 10
    db_max_overflow: int = 20
    db_connect_timeout_s: int = 5

    # Reconciler / worker deadlines (read by worker/).
    queued_grace_s: float = 120.0  # a `queued` row older than this is enqueued again
    # A `compiling`/`running` row whose lease expired is enqueued again. Short and renewed often
    # (one UPDATE every lease_renew_s) so that a dead worker's job runs again within a minute:
    # recovery <= running_lease_s + the reconcile interval (issue #15). A renewal that cannot
    # reach the database for a whole lease costs a re-evaluation, never a second result.
    running_lease_s: float = 30.0
    lease_renew_s: float = 5.0
    max_attempts: int = 3  # deliveries before a submission is marked `error`
    # Time the torch.compile baseline too (once per problem, device and torch version; cached).
    # None: on GPU targets. Off shortens a fresh host's first evaluation of each problem by the
    # inductor compile (20-40 s), at the cost of `speedup.vs_compile`.
    compile_baseline: bool | None = None
    # Re-measure a cached baseline on every Nth evaluation that uses it, and replace it (and
    # revise the speedups stored against it) when two re-measurements contradict it; 0: never.
    baseline_recheck_every: int = Field(default=25, ge=0)

    @property
    def home_dir(self) -> Path:
        return self.home.expanduser()

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.home_dir / 'kjudge.db'}"

    @property
    def broker_dir(self) -> Path:
        """The folder kombu's filesystem transport exchanges messages through."""
        return self.home_dir / "broker"

    @property
    def effective_broker_url(self) -> str:
        return self.broker_url or "filesystem://"

    @property
    def broker_transport_options(self) -> dict[str, Any]:
        if self.effective_broker_url.startswith("filesystem"):
            folder = str(self.broker_dir / "queue")
            return {
                "data_folder_in": folder,
                "data_folder_out": folder,
                "processed_folder": str(self.broker_dir / "processed"),
                "store_processed": False,
            }
        return {}

    @property
    def effective_redis_url(self) -> str | None:
        if self.redis_url:
            return self.redis_url
        url = self.effective_broker_url
        return url if url.startswith(("redis://", "rediss://")) else None

    @property
    def is_sqlite(self) -> bool:
        return self.effective_database_url.startswith("sqlite")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


class TaskLimits(BaseSettings):
    """Celery limits, under `KJUDGE_WORKER_` (worker.config.WorkerSettings extends this class).
    The soft limit raises inside the task (kjudge's own hang: retried); the hard limit kills the
    pool process (the message is rejected and the reconciler takes over)."""

    model_config = SettingsConfigDict(env_prefix="KJUDGE_WORKER_", extra="ignore")

    soft_time_limit_s: int = 1800
    hard_time_limit_s: int = 1900


@lru_cache(maxsize=1)
def get_task_limits() -> TaskLimits:
    return TaskLimits()
