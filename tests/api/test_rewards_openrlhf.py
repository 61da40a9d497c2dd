"""POST /v1/rewards/openrlhf without a worker (real PostgreSQL and Redis): what happens when
kjudge, not the kernel, fails — the wait runs out, status `error` — plus auth by URL, replays of
a retried request and backpressure. Scoring real evaluations: tests/rewards/test_adaptors.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from api.app import create_app
from db.models import Submission
from tests.api.conftest import CPP_SOURCE, LOOPBACK, RELU_ID, make_settings

PROMPT = "Write a ReLU kernel.\n"
BODY = {
    "query": [PROMPT + f"```cpp\n{CPP_SOURCE}```", PROMPT + "no idea"],
    "prompts": [PROMPT, PROMPT],
    "labels": ["relu", "relu"],
}


@pytest.fixture
def make_client(pg_url, redis_url, tmp_path, db, rds) -> Iterator:
    opened: list[TestClient] = []

    def make(**over) -> TestClient:
        settings = make_settings(pg_url, redis_url, tmp_path, **over)
        client = TestClient(create_app(settings, startup=False), client=LOOPBACK)
        opened.append(client.__enter__())
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


def _rows(db) -> list[Submission]:
    db.expire_all()
    return list(db.scalars(sa.select(Submission)).all())


def test_an_evaluation_that_never_finishes_is_an_infra_error(make_client, key, db) -> None:
    client = make_client(reward_wait_s=0.5, reward_config={"infra_score": 0.3})
    reply = client.post("/v1/rewards/openrlhf", params={"api_key": key, "target": "cpu"}, json=BODY)
    assert reply.status_code == 200, reply.text
    got = reply.json()
    assert got["rewards"] == [0.3, -0.75]  # the configured infra score; the format score
    assert got["scores"] == [0.0, 0.0]
    assert got["extra_logs"]["kjudge_infra_error"] == [1.0, 0.0]
    assert got["extra_logs"]["kjudge_no_code"] == [0.0, 1.0]
    (row,) = _rows(db)  # only the response with code was submitted
    assert (row.problem_id, row.language, row.target) == (RELU_ID, "cpp", "cpu")


def test_status_error_is_an_infra_error(make_client, key, db) -> None:
    client = make_client(reward_wait_s=20)

    def fail() -> None:  # the worker gives up on it: kjudge's failure, not the kernel's
        for row in _rows(db):
            row.status, row.message = "error", "worker lost"
        db.commit()

    timer = threading.Timer(1.0, fail)
    timer.start()
    reply = client.post("/v1/rewards/openrlhf", params={"api_key": key, "target": "cpu"}, json=BODY)
    timer.join()
    assert reply.status_code == 200, reply.text
    assert reply.json()["rewards"][0] == 0.0 and reply.json()["extra_logs"]["kjudge_infra_error"][0] == 1.0


def test_a_retried_request_replays_and_auth_is_required(make_client, key, db) -> None:
    client = make_client(reward_wait_s=0.2)
    assert client.post("/v1/rewards/openrlhf", json=BODY).status_code == 401
    for _ in range(2):
        reply = client.post("/v1/rewards/openrlhf", params={"api_key": key, "target": "cpu"}, json=BODY)
        assert reply.status_code == 200, reply.text
    assert len(_rows(db)) == 1


def test_a_full_queue_refuses_the_request_with_retry_after(make_client, key, db) -> None:
    client = make_client(reward_wait_s=0.2, max_queue_depth=1, queue_depth_cache_s=0, queue_retry_after_s=3)
    assert (
        client.post("/v1/rewards/openrlhf", params={"api_key": key, "target": "cpu"}, json=BODY).status_code
        == 200
    )
    other = {**BODY, "query": [PROMPT + f"```cpp\n// v2\n{CPP_SOURCE}```", PROMPT]}
    refused = client.post("/v1/rewards/openrlhf", params={"api_key": key, "target": "cpu"}, json=other)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "3"
    assert len(_rows(db)) == 1
