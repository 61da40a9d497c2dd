"""A real `kjudge serve` (embedded: SQLite + kombu's filesystem broker, its own worker) on the CPU
target, shared by the whole session: the adaptors' tests run against it exactly as a trainer
would, through $KJUDGE_URL. Completions shared by the tests are evaluated once (the adaptors
reuse stored results of identical sources), so a session costs four real evaluations."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import REPO, wait_for
from tests.service.test_serve_embedded import _embedded_env, _free_port

EXAMPLES = REPO / "examples" / "relu"
PROBLEM_NAME = "relu_rl"

# The four kernels: correct, wrong, not compiling, and a hack (it calls the reference's op).
CORRECT = (EXAMPLES / "relu_cpp.cpp").read_text()
INCORRECT = (EXAMPLES / "relu_incorrect.cpp").read_text()
COMPILE_ERROR = """#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) {
    auto y = x.clamp_min(0)
    return y;
}
"""
HACK = "#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x) { return torch::relu(x); }\n"
NO_CODE = "I would write a ReLU kernel that clamps negative values to zero, but I am not sure how."


def fenced(code: str, tag: str = "cpp") -> str:
    """A completion as a model writes one: reasoning, a draft, then the answer last."""
    return (
        "Let me think about the kernel. A first idea:\n```text\nout = max(x, 0)\n```\n"
        f"Here is my final answer:\n```{tag}\n{code}```\nThis should be fast."
    )


@dataclass(frozen=True)
class Server:
    url: str
    problem: str  # the problem's name; its id is problem_id
    problem_id: str
    log: Path


def _seed(home: Path) -> str:
    import sqlalchemy as sa

    from core.settings import Settings
    from db.migrate import upgrade
    from db.models import Problem
    from db.session import make_engine

    settings = Settings(home=home)
    upgrade(settings)
    source = (EXAMPLES / "problem.py").read_text()
    pid = hashlib.sha256(source.encode()).hexdigest()
    engine = make_engine(settings.effective_database_url)
    with engine.begin() as conn:
        if not conn.execute(sa.select(Problem.id).where(Problem.id == pid)).first():
            conn.execute(
                sa.insert(Problem).values(
                    id=pid, name=PROBLEM_NAME, source=source, tags=[], settings={}, roofline={}
                )
            )
    engine.dispose()
    return pid


@pytest.fixture(scope="session")
def server(kjudge_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = kjudge_home  # the session's builds and precompiled header are shared with other suites
    pid = _seed(home)
    port = _free_port()
    log_path = tmp_path_factory.mktemp("rewards") / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kjudge", "serve", "--port", str(port)],
            env=_embedded_env(home),
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.poll() is not None:
            raise AssertionError(
                f"kjudge serve exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}"
            )
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(healthy, 120, "kjudge serve to answer /healthz")
        yield Server(url=url, problem=PROBLEM_NAME, problem_id=pid, log=log_path)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=40)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture
def kjudge_env(server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    """$KJUDGE_URL set as a trainer's launcher would (the loopback server needs no key)."""
    monkeypatch.setenv("KJUDGE_URL", server.url)
    monkeypatch.delenv("KJUDGE_API_KEY", raising=False)
    monkeypatch.delenv("KJUDGE_REWARD_CONFIG", raising=False)
    return server


def dead_url() -> str:
    """A loopback port nothing listens on: a stopped kjudge server."""
    return f"http://127.0.0.1:{_free_port()}"
