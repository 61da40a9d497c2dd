"""`kjudge serve` on embedded defaults: no PostgreSQL, no Redis — SQLite and kombu's filesystem
broker under KJUDGE_HOME — through the same API, task and worker code as production."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.embedded_serve import embedded_env, seed_problem, serve
from bench.private_services import free_port

from .conftest import DATA, REPO, wait_for

pytestmark = pytest.mark.slow


def _seed_problem(home: Path) -> str:
    """Creates the embedded database the way serve does and stores the test problem in it."""
    return seed_problem(home, (DATA / "relu_problem.py").read_text(), "relu_small")


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, str, subprocess.Popen[bytes], Path]]:
    home = tmp_path / "home"
    pid = _seed_problem(home)
    with serve(home, tmp_path / "serve.log", timeout_s=90) as server:
        yield server.url, pid, server.proc, server.log_path


@pytest.fixture()
def served_shared_builds(
    tmp_path: Path, kjudge_toolchain: Path
) -> Iterator[tuple[str, str, subprocess.Popen[bytes], Path]]:
    """As `served`, but the build cache is the session's, its precompiled header and CPU lite
    runtime built before serve starts (kjudge_toolchain): not built again (the test above pays
    for a first run's), nor while the first candidate waits."""
    kjudge_home = kjudge_toolchain
    home = tmp_path / "home"
    pid = _seed_problem(home)
    (kjudge_home / "cache").mkdir(parents=True, exist_ok=True)
    (home / "cache").symlink_to(kjudge_home / "cache")
    with serve(home, tmp_path / "serve.log", timeout_s=90) as server:
        yield server.url, pid, server.proc, server.log_path


def test_serve_evaluates_a_submission_without_any_server(served, tmp_path: Path) -> None:
    base, problem_id, proc, log_path = served
    with httpx.Client(base_url=base, timeout=30) as client:
        body = {
            "problem_id": problem_id,
            "language": "triton",
            "source": (DATA / "relu_triton.py").read_text(),
            "target": "cpu",
        }
        accepted = client.post("/v1/submissions", json=body)
        assert accepted.status_code == 202, accepted.text
        sid = accepted.json()["id"]

        def done() -> dict | None:
            got = client.get(f"/v1/submissions/{sid}", params={"wait": 5}).json()
            return got if got["status"] in ("done", "error") else None

        final = wait_for(done, 240, "the embedded worker to finish", lambda: log_path.read_text()[-4000:])
        # The default target ('any') must not strand a submission on a machine without a GPU.
        default_target = client.post("/v1/submissions", json={**body, "target": None}).json()["id"]
    assert (final["status"], final["verdict"]) == ("done", "correct"), final
    assert final["result"]["target"]["backend"] == "cpu"
    home = tmp_path / "home"
    assert (home / "kjudge.db").is_file() and (home / "broker" / "queue").is_dir()
    with httpx.Client(base_url=base, timeout=30) as client:
        wait_for(
            lambda: (
                client.get(f"/v1/submissions/{default_target}", params={"wait": 5}).json()["status"] == "done"
            ),
            240,
            "the default-target submission",
            lambda: log_path.read_text()[-4000:],
        )

    # Stopping serve stops its worker too: no process of the session is left behind.
    from worker.launcher import descendants

    children = descendants(proc.pid)
    assert children, "serve should have started a worker"
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in children if _alive(p)], "worker processes outlived kjudge serve"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_serve_refuses_a_public_address_without_keys(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "kjudge", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        env=embedded_env(tmp_path / "home"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert "KJUDGE_API_KEYS_REQUIRED=true" in run.stderr and "Traceback" not in run.stderr


def test_workers_do_not_outlive_a_killed_serve(served) -> None:
    from worker.launcher import descendants

    _base, _pid, proc, _log = served
    children = wait_for(lambda: descendants(proc.pid), 60, "serve to start its worker")
    os.kill(proc.pid, signal.SIGKILL)  # serve itself only: no chance to stop its worker
    proc.wait(timeout=10)
    deadline = time.monotonic() + 45
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in children if _alive(p)], "orphaned worker processes kept running"
