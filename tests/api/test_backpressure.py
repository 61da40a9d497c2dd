"""Backpressure: a queue deeper than max_queue_depth refuses new work with 429 + Retry-After,
whole batches at once, and the SDK's retry gets the same batch in once the queue drains.
Real PostgreSQL and Redis (tests/api/conftest.py); no worker: the test drains the queue."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from api.app import create_app
from db.models import Submission
from kjudge import Client
from tests.api.conftest import LOOPBACK, make_settings, queued_ids, serve_app, submission


def _count(db: sa.orm.Session) -> int:
    db.expire_all()
    return int(db.scalar(sa.select(sa.func.count()).select_from(Submission)) or 0)


@pytest.fixture
def full_client(pg_url, redis_url, tmp_path, db, key, rds) -> Iterator[TestClient]:
    settings = make_settings(
        pg_url, redis_url, tmp_path, max_queue_depth=3, queue_depth_cache_s=0, queue_retry_after_s=2
    )
    app = create_app(settings, startup=False)
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {key}"}) as c:
        yield c


def test_a_full_queue_refuses_with_retry_after_and_stores_nothing(full_client, db, rds) -> None:
    for _ in range(3):
        assert full_client.post("/v1/submissions", json=submission()).status_code == 202
    refused = full_client.post("/v1/submissions", json=submission())
    assert refused.status_code == 429, refused.text
    assert refused.headers["Retry-After"] == "2"
    body = refused.json()["error"]
    assert body["code"] == "queue_full"
    assert body["details"] == {"queue": "eval.cpu", "depth": 3, "limit": 3, "adding": 1}
    # A batch is refused whole: not the first item that would fit in a freed slot, nothing.
    db.execute(sa.update(Submission).where(Submission.id == queued_ids(rds)[0]).values(status="done"))
    db.commit()
    batch = full_client.post("/v1/batches", json={"submissions": [submission(), submission()]})
    assert batch.status_code == 429, batch.text
    assert _count(db) == 3
    # Another target's queue is not this one's business.
    other = full_client.post("/v1/submissions", json=submission(target="cuda"))
    assert other.status_code == 202, other.text


def test_reused_results_are_admitted_on_a_full_queue(full_client, db, rds) -> None:
    first = full_client.post("/v1/submissions", json=submission()).json()["id"]
    db.execute(sa.update(Submission).where(Submission.id == first).values(status="done", verdict="correct"))
    from db.models import ResultRow

    db.add(ResultRow(submission_id=first, result={"problem_id": "x", "verdict": "correct"}))
    db.commit()
    for i in range(3):
        assert full_client.post("/v1/submissions", json=submission(source=f"// {i}\n")).status_code == 202
    reused = full_client.post("/v1/submissions", json=submission(reuse=True))
    assert reused.status_code == 202, reused.text
    assert reused.json()["status"] == "done"


@pytest.fixture
def live_full(pg_url, redis_url, tmp_path, db, rds) -> Iterator[str]:
    settings = make_settings(
        pg_url, redis_url, tmp_path, max_queue_depth=2, queue_depth_cache_s=0.2, queue_retry_after_s=1
    )
    with serve_app(create_app(settings, startup=False)) as url:
        yield url


def test_the_sdk_retries_a_refused_batch_until_the_queue_drains(live_full, db, key, rds) -> None:
    with Client(live_full, api_key=key, retries=8) as kj:
        kj.submit_many([submission(), submission()])
        waiting = [s.id for s in db.scalars(sa.select(Submission)).all()]
        assert len(waiting) == 2

        def drain() -> None:  # a worker claims the two waiting submissions
            db.execute(sa.update(Submission).where(Submission.id.in_(waiting)).values(status="running"))
            db.commit()

        timer = threading.Timer(1.5, drain)
        timer.start()
        started = time.monotonic()
        accepted = kj.submit_many([submission(), submission()])
        waited = time.monotonic() - started
        timer.join()
    assert accepted.count == 2
    assert waited >= 1.0, "the batch went in before the queue drained"
    assert _count(db) == 4
    assert sorted(queued_ids(rds)) == sorted([*waiting, *(s.id for s in accepted.submissions)])


def test_a_reused_result_comes_back_in_the_post_when_asked(client, db, rds) -> None:
    """?include_result=true: an RL reward of a kernel seen before costs one request."""
    from db.models import ResultRow

    first = client.post("/v1/submissions", json=submission()).json()["id"]
    db.execute(sa.update(Submission).where(Submission.id == first).values(status="done", verdict="incorrect"))
    db.add(
        ResultRow(submission_id=first, result={"problem_id": "x", "verdict": "incorrect", "feedback": "f"})
    )
    db.commit()
    body = {"submissions": [submission(reuse=True), submission(reuse=True, source="// new\n")]}
    with_results = client.post("/v1/batches", params={"include_result": "true"}, json=body).json()[
        "submissions"
    ]
    assert with_results[0]["status"] == "done" and with_results[0]["result"]["feedback"] == "f"
    assert with_results[0]["result"]["id"] == with_results[0]["id"]  # the new submission's copy
    assert with_results[1]["status"] == "queued" and with_results[1]["result"] is None
    plain = client.post("/v1/submissions", json=submission(reuse=True)).json()
    assert plain["status"] == "done" and plain["result"] is None
    single = client.post(
        "/v1/submissions", params={"include_result": "true"}, json=submission(reuse=True)
    ).json()
    assert single["result"]["verdict"] == "incorrect"
