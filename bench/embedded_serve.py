"""`kjudge serve` on its embedded defaults (SQLite + kombu's filesystem broker under a private
KJUDGE_HOME, its own worker) as a subprocess, for benches and tests: the home seeded with a
problem, the server started in a session of its own, /healthz awaited, and at the end SIGINT (a
clean stop of serve and its worker) then SIGKILL for whatever of its session is left.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.private_services import free_port, stop_group

REPO = Path(__file__).resolve().parent.parent


def embedded_env(home: Path) -> dict[str, str]:
    """This process's environment without any KJUDGE_ setting, on `home` and this checkout (ahead
    of any PYTHONPATH already set: the GPU machine carries its missing packages there)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")}
    path = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env.update(KJUDGE_HOME=str(home), PYTHONPATH=os.pathsep.join(path))
    return env


def seed_problem(home: Path, source: str, name: str) -> str:
    """Creates the embedded database the way serve does and stores the problem in it (once: its
    id is the source's hash); returns the problem's id."""
    import sqlalchemy as sa

    from core.settings import Settings
    from db.migrate import upgrade
    from db.models import Problem
    from db.session import make_engine

    settings = Settings(home=home)
    upgrade(settings)
    pid = hashlib.sha256(source.encode()).hexdigest()
    engine = make_engine(settings.effective_database_url)
    with engine.begin() as conn:
        if not conn.execute(sa.select(Problem.id).where(Problem.id == pid)).first():
            conn.execute(
                sa.insert(Problem).values(id=pid, name=name, source=source, tags=[], settings={}, roofline={})
            )
    engine.dispose()
    return pid


@dataclass(frozen=True)
class Served:
    proc: subprocess.Popen[bytes]
    url: str
    log_path: Path

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def wait_healthy(self, timeout_s: float) -> None:
        """Until /healthz answers 200; RuntimeError (with the log's tail) if serve exits first or
        does not answer within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kjudge serve exited with {self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"kjudge serve did not answer /healthz in {timeout_s:.0f} s:\n{self.log_tail()}"
                )
            time.sleep(0.2)


@contextlib.contextmanager
def serve(
    home: Path,
    log_path: Path,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    timeout_s: float = 120,
) -> Iterator[Served]:
    """`kjudge serve --port <free> *args` on `home` (embedded_env(home), then `env` over it), its
    output appended to `log_path`; yields once /healthz answers and stops it on the way out
    (whatever the caller already did to it)."""
    port = free_port()
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kjudge", "serve", "--port", str(port), *args],
            env={**embedded_env(home), **(env or {})},
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        served = Served(proc, f"http://127.0.0.1:{port}", log_path)
        served.wait_healthy(timeout_s)
        yield served
    finally:
        stop_group(proc, signal.SIGINT, grace_s=40)
