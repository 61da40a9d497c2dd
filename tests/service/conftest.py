"""Fixtures for the service tests: a private PostgreSQL database, a private Redis db number, real
Celery worker processes (`kjudge worker`) and helpers to watch submissions reach `done`.

Services: PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth) and Redis on 127.0.0.1:6379,
as .ci/run starts them. Without them these tests skip locally and fail under CI=true.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.private_services import kill_group, stop_group
from tests.databases import fresh_database, unavailable

try:
    import sqlalchemy as sa

    from core.settings import Settings
except ImportError:  # a GPU node with only the evaluator's dependencies: only the gpu tests run there
    sa = None  # type: ignore[assignment]

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
# Private to these tests (the API tests use 12); KJUDGE_TEST_REDIS_DB_SERVICE moves it.
REDIS_DB = int(os.environ.get("KJUDGE_TEST_REDIS_DB_SERVICE", "11"))
REDIS_START = [
    "redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", str(REDIS_PORT),
    "--save", "", "--appendonly", "no", "--dir", "/var/lib/redis", "--logfile", "/var/log/redis/ci.log",
]  # fmt: skip

# Short deadlines so that recovery paths run in seconds (production defaults are minutes).
FAST_RECOVERY_ENV = {
    "KJUDGE_RUNNING_LEASE_S": "4",
    "KJUDGE_QUEUED_GRACE_S": "3",
    "KJUDGE_MAX_ATTEMPTS": "3",
    "KJUDGE_WORKER_RECONCILE_INTERVAL_S": "1",
    "KJUDGE_WORKER_HEARTBEAT_INTERVAL_S": "1",
    "KJUDGE_WORKER_RETRY_BACKOFF_S": "0.5",
}


def redis_ping() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def redis_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["redis-cli", "-h", REDIS_HOST, "-p", str(REDIS_PORT), "-n", str(REDIS_DB), *args],
        capture_output=True,
        text=True,
        timeout=10,
    )


def restart_redis() -> None:
    """`shutdown nosave` then start it again exactly as .ci/run does: everything queued is lost."""
    subprocess.run(["redis-cli", "-h", REDIS_HOST, "-p", str(REDIS_PORT), "shutdown", "nosave"],
                   capture_output=True, timeout=10)  # fmt: skip
    deadline = time.monotonic() + 10
    while redis_ping() and time.monotonic() < deadline:
        time.sleep(0.1)
    ensure_redis()


def ensure_redis() -> None:
    if redis_ping():
        return
    subprocess.run(REDIS_START, check=True, capture_output=True, timeout=20)
    deadline = time.monotonic() + 20
    while not redis_ping():
        if time.monotonic() > deadline:
            raise RuntimeError("redis-server did not come back")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def redis_url() -> str:
    if not redis_ping():
        unavailable("Redis", "service tests")
    return f"redis://{REDIS_HOST}:{REDIS_PORT}/{REDIS_DB}"


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh migrated database for the session (tests/databases.py)."""
    with fresh_database("kjudge_svc", "service tests") as url:
        yield url


@pytest.fixture(scope="session")
def service_home(kjudge_home: Path) -> Path:
    # The session's shared home: workers find the precompiled header and builds already there.
    return kjudge_home


@pytest.fixture(scope="session")
def service_env(pg_url: str, redis_url: str, service_home: Path) -> dict[str, str]:
    """The environment of every process in these tests (workers, and this one's settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")}
    env.update(FAST_RECOVERY_ENV)
    env.update(
        KJUDGE_DATABASE_URL=pg_url,
        KJUDGE_BROKER_URL=redis_url,
        KJUDGE_HOME=str(service_home),
        PYTHONPATH=str(REPO),
    )
    return env


@pytest.fixture(scope="session")
def settings(service_env: dict[str, str]) -> Settings:
    return Settings(
        database_url=service_env["KJUDGE_DATABASE_URL"],
        broker_url=service_env["KJUDGE_BROKER_URL"],
        home=Path(service_env["KJUDGE_HOME"]),
        running_lease_s=float(FAST_RECOVERY_ENV["KJUDGE_RUNNING_LEASE_S"]),
        queued_grace_s=float(FAST_RECOVERY_ENV["KJUDGE_QUEUED_GRACE_S"]),
        max_attempts=int(FAST_RECOVERY_ENV["KJUDGE_MAX_ATTEMPTS"]),
    )


@pytest.fixture(scope="session")
def engine(settings: Settings) -> sa.Engine:
    from db.session import get_engine

    return get_engine(settings)


@pytest.fixture()
def clean_db(engine: sa.Engine) -> None:
    """Each test starts with no submissions (problems stay: they are content-addressed)."""
    with engine.begin() as conn:
        for table in ("results", "submissions", "batches", "workers", "baselines"):
            conn.execute(sa.text(f"DELETE FROM {table}"))
    redis_cli("flushdb")


class WorkerProcess:
    """`kjudge worker --cpu --take-any` as a subprocess in its own session (so kill -9 of the
    group takes the launcher, the Celery main process and its pool process at once)."""

    def __init__(self, env: dict[str, str], log_path: Path, args: tuple[str, ...] = ()) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kjudge", "worker", "--cpu", "--take-any", "--loglevel", "INFO", *args],
            env=env,
            cwd=REPO,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill9(self) -> None:
        kill_group(self.proc)
        self._log.close()

    def stop(self) -> None:
        stop_group(self.proc)  # then kills anything left in its session
        self._log.close()

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""


@pytest.fixture()
def start_worker(service_env: dict[str, str], tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(*args: str, **extra_env: str) -> WorkerProcess:
        w = WorkerProcess({**service_env, **extra_env}, tmp_path / f"worker{len(started)}.log", args)
        started.append(w)
        return w

    yield start
    for w in started:
        w.stop()


def wait_for(
    predicate: Callable[[], Any], timeout_s: float, what: str, log: Callable[[], str] | None = None
) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            tail = f"\n--- worker log ---\n{log()}" if log else ""
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}{tail}")
        time.sleep(0.2)


class Rows:
    """Direct row access for tests: what the API would have stored, and what the worker wrote."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    def problem(self, source: str, name: str = "relu") -> str:
        """Stores a problem row directly (content-addressed: the same source is one row)."""
        import hashlib

        from db.models import Problem

        pid = hashlib.sha256(source.encode()).hexdigest()
        with self.engine.begin() as conn:
            exists = conn.execute(sa.select(Problem.id).where(Problem.id == pid)).first()
            if not exists:
                conn.execute(
                    sa.insert(Problem).values(
                        id=pid, name=name, source=source, tags=[], settings={}, roofline={}
                    )
                )
        return pid

    def submission(
        self,
        problem_id: str,
        *,
        source: str = "# candidate\n",
        language: str = "triton",
        target: str = "cpu",
        **values: Any,
    ) -> str:
        """Stores a `queued` submission row directly, as the API does before enqueueing it."""
        import hashlib

        from core.queues import queue_for_target
        from db.models import Submission

        sid = str(uuid.uuid4())
        row = {
            "id": sid,
            "problem_id": problem_id,
            "language": language,
            "source": source,
            "source_sha256": hashlib.sha256(source.encode()).hexdigest(),
            "entry": None,
            "target": target,
            "queue": queue_for_target(target),
            "metadata": {},
            "status": "queued",
            "attempts": 0,
        }
        row.update(values)
        with self.engine.begin() as conn:
            conn.execute(sa.insert(Submission).values(**row))
        return sid

    def row(self, sid: str) -> dict[str, Any]:
        from db.models import Submission

        with self.engine.connect() as conn:
            return dict(
                conn.execute(sa.select(Submission.__table__).where(Submission.id == sid)).mappings().one()
            )

    def result_count(self, sid: str) -> int:
        from db.models import ResultRow

        with self.engine.connect() as conn:
            return int(
                conn.execute(sa.select(sa.func.count()).where(ResultRow.submission_id == sid)).scalar_one()
            )


@pytest.fixture()
def rows(engine: sa.Engine) -> Rows:
    return Rows(engine)
