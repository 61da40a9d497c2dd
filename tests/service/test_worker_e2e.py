"""End to end on real services: the API (in this process) stores and enqueues on a real Redis, a
real `kjudge worker` process claims, evaluates with the real evaluator (Triton's CPU interpreter)
and writes to a real PostgreSQL. Then the faults: duplicate messages, kill -9 of the worker in
the middle of an evaluation, Redis restarted with submissions queued, a submission kjudge
cannot load.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi")  # the GPU machine runs the GPU tests without the service's packages
pytest.importorskip("celery")
from fastapi.testclient import TestClient  # noqa: E402

from core.settings import Settings  # noqa: E402

from .conftest import DATA, Rows, WorkerProcess, ensure_redis, redis_cli, restart_redis, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("clean_db")]

PROBLEM = (DATA / "relu_problem.py").read_text()
CORRECT = (DATA / "relu_triton.py").read_text()
WRONG = (DATA / "relu_triton_wrong.py").read_text()
SLOW = (DATA / "relu_triton_slow.py").read_text()

EVAL_TIMEOUT_S = 180  # one CPU evaluation takes seconds; generous for a loaded 2-core CI box


@pytest.fixture()
def api(settings: Settings) -> Iterator[TestClient]:
    from api.app import create_app

    # A loopback client: the embedded default's anonymous access (no key needed).
    with TestClient(create_app(settings, startup=False), client=("127.0.0.1", 50000)) as client:
        yield client


@pytest.fixture()
def problem_id(rows: Rows) -> str:
    return rows.problem(PROBLEM, "relu_small")


def submit(api: TestClient, problem_id: str, source: str, **extra: Any) -> str:
    body = {"problem_id": problem_id, "language": "triton", "source": source, "target": "cpu", **extra}
    response = api.post("/v1/submissions", json=body)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def wait_final(
    api: TestClient, sid: str, worker: WorkerProcess | None = None, timeout_s: float = EVAL_TIMEOUT_S
):
    def final() -> dict[str, Any] | None:
        body = api.get(f"/v1/submissions/{sid}", params={"wait": 2}).json()
        return body if body["status"] in ("done", "error") else None

    return wait_for(final, timeout_s, f"submission {sid} to finish", worker.log_tail if worker else None)


def test_submit_reaches_done_with_the_evaluators_verdict(
    api: TestClient, problem_id: str, rows: Rows, start_worker: Callable[..., WorkerProcess]
) -> None:
    """One worker, started once (seconds of CPU each time), for the plain paths: it registers and
    heartbeats, evaluates, reports a submission kjudge cannot load as `error`, and goes offline
    when stopped."""
    worker = start_worker()
    first = _check_registered(rows, worker)
    good = submit(api, problem_id, CORRECT, metadata={"model": "m1", "run_id": "r1"})
    bad = submit(api, problem_id, WRONG)
    profiled = submit(api, problem_id, CORRECT, profile=True)
    done_good = wait_final(api, good, worker)
    done_bad = wait_final(api, bad, worker)
    done_profiled = wait_final(api, profiled, worker)

    assert (done_good["status"], done_good["verdict"]) == ("done", "correct"), done_good
    result = done_good["result"]
    assert result["id"] == good and result["problem_id"] == problem_id
    assert result["correct"] and result["correctness"]["passed"] == result["correctness"]["trials"]
    assert result["target"]["backend"] == "cpu"
    assert result["metadata"]["model"] == "m1"
    assert "queued" in result["durations_s"]
    assert "profile" not in result or result["profile"] is None
    # "profile": true reaches the evaluator through the claim: on the cpu target it says why
    # there is none, and the verdict is the plain run's
    assert (done_profiled["verdict"], done_profiled["profile"]) == ("correct", True), done_profiled
    assert done_profiled["result"]["profile"]["available"] is False
    assert "cpu target" in done_profiled["result"]["profile"]["message"]
    assert (done_bad["status"], done_bad["verdict"]) == ("done", "incorrect"), done_bad
    assert done_bad["result"]["correctness"]["max_abs_err"] > 0
    for sid in (good, bad):
        row = rows.row(sid)
        assert row["attempts"] == 1 and row["worker"].endswith(":cpu") and row["lease_expires_at"] is None
        assert rows.result_count(sid) == 1

    _check_unloadable_is_an_error(api, rows, worker)
    wait_for(lambda: _registered(rows)[3] > first[3], 10, "a heartbeat", worker.log_tail)
    worker.stop()
    assert _registered(rows)[2] == "offline" and _registered(rows, "compile")[2] == "offline"


def test_duplicate_messages_produce_one_evaluation(
    api: TestClient,
    problem_id: str,
    rows: Rows,
    settings: Settings,
    start_worker: Callable[..., WorkerProcess],
) -> None:
    from core.celery_config import make_app
    from core.publish import CeleryEnqueuer

    sid = submit(api, problem_id, CORRECT)
    # Three more copies of the same message, as a redelivery or a reconciler race would send.
    assert CeleryEnqueuer(make_app(settings)).enqueue([(sid, "eval.cpu")] * 3) == 3
    worker = start_worker()
    assert wait_final(api, sid, worker)["verdict"] == "correct"
    wait_for(lambda: redis_cli("llen", "eval.cpu").stdout.strip() == "0", 60, "the duplicates to drain")
    row = rows.row(sid)
    assert row["attempts"] == 1, "a duplicate message must not start a second evaluation"
    assert rows.result_count(sid) == 1


def test_kill9_of_the_worker_mid_evaluation_still_finishes_exactly_once(
    api: TestClient, problem_id: str, rows: Rows, start_worker: Callable[..., WorkerProcess]
) -> None:
    first = start_worker()
    sid = submit(api, problem_id, SLOW)
    # The candidate sleeps 8 s at import: once the row is claimed and the child started, kill.
    wait_for(lambda: rows.row(sid)["attempts"] == 1, 90, "the first worker to claim it", first.log_tail)
    time.sleep(3)
    assert rows.row(sid)["status"] in ("compiling", "running")
    first.kill9()
    time.sleep(1)
    assert rows.row(sid)["status"] in ("compiling", "running"), "nobody may finish it while no worker runs"
    assert rows.result_count(sid) == 0

    second = start_worker()
    done = wait_final(api, sid, second)
    assert (done["status"], done["verdict"]) == ("done", "correct"), done
    row = rows.row(sid)
    assert row["attempts"] == 2, "the lost attempt is recorded"
    assert rows.result_count(sid) == 1


def test_redis_restart_with_submissions_queued_loses_none(
    api: TestClient, problem_id: str, rows: Rows, start_worker: Callable[..., WorkerProcess]
) -> None:
    # No worker yet: the messages sit in Redis, and die with it.
    ids = [submit(api, problem_id, CORRECT, metadata={"rollout_id": str(i)}) for i in range(3)]
    assert redis_cli("llen", "eval.cpu").stdout.strip() == "3"
    try:
        restart_redis()
        assert redis_cli("llen", "eval.cpu").stdout.strip() == "0", "the restart should have lost the queue"
        worker = start_worker()
        for sid in ids:
            done = wait_final(api, sid, worker)
            assert (done["status"], done["verdict"]) == ("done", "correct"), done
            assert rows.result_count(sid) == 1
    finally:
        ensure_redis()


def _check_unloadable_is_an_error(api: TestClient, rows: Rows, worker: WorkerProcess) -> None:
    # A stored problem whose source no longer parses (the API validates problems, so only a
    # damaged database gets here): kjudge's own failure, kept as `error` with the reason.
    broken = rows.problem("import torch\nclass Model(:\n", "broken")
    sid = rows.submission(broken, source=CORRECT)
    from core.celery_config import make_app
    from core.publish import CeleryEnqueuer

    CeleryEnqueuer(make_app(api.app.state.settings)).enqueue([(sid, "eval.cpu")])
    done = wait_final(api, sid, worker, timeout_s=90)
    assert done["status"] == "error" and done["verdict"] is None
    assert "syntax error" in done["message"], done["message"]
    assert rows.result_count(sid) == 0


def _registered(rows: Rows, stage: str = "cpu") -> Any:
    import sqlalchemy as sa

    with rows.engine.connect() as conn:
        return conn.execute(
            sa.text("SELECT id, queue, status, last_seen FROM workers WHERE id LIKE :id"),
            {"id": f"%:{stage}"},
        ).first()


def _check_registered(rows: Rows, worker: WorkerProcess) -> Any:
    """The pipelined host registers a compile pool on the API's queues and a run stage on its
    host's run queue; returns the run stage's row."""
    first = wait_for(lambda: _registered(rows), 60, "the worker to register", worker.log_tail)
    assert first[0].endswith(":cpu") and first[1].startswith("run.") and ".cpu." in first[1]
    pool = wait_for(lambda: _registered(rows, "compile"), 60, "the compile pool to register", worker.log_tail)
    assert "eval.cpu" in pool[1] and "eval.any" in pool[1]
    return first
