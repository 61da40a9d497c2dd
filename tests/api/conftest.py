"""Fixtures for the API tests: a private PostgreSQL database and a private Redis db number.

Real services, no mocks: PostgreSQL on 127.0.0.1:5432 (trust auth) and Redis on 127.0.0.1:6379.
No Celery worker runs here; enqueued messages are read back from the Redis queue (the worker's
end-to-end tests live in tests/service). Without the services these tests skip locally and
fail under CI=true.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import sqlalchemy as sa
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import create_key
from core.settings import Settings
from db.models import Base, Problem
from db.session import get_sessionmaker
from tests.databases import fresh_database, unavailable

# Private to these tests (tests/service uses 11); KJUDGE_TEST_REDIS_DB_API moves it so that two
# checkouts can run the suite side by side on one Redis.
REDIS_DB = int(os.environ.get("KJUDGE_TEST_REDIS_DB_API", "12"))
LOOPBACK = ("127.0.0.1", 50000)

RELU_SOURCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1024)]


def get_init_inputs():
    return []
"""
RELU_ID = hashlib.sha256(RELU_SOURCE.encode()).hexdigest()
CPP_SOURCE = (
    "#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x) { return x.clamp_min(0); }\n"
)


@contextlib.contextmanager
def serve_app(app: FastAPI) -> Iterator[str]:
    """`app` served by uvicorn on a free loopback port in a thread; yields its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_url() -> str:
    if not _port_open(6379):
        unavailable("Redis", "API tests")
    return f"redis://127.0.0.1:6379/{REDIS_DB}"


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh migrated database for the session (tests/databases.py)."""
    with fresh_database("kjudge_test", "API tests") as url:
        yield url


def make_settings(pg_url: str, redis_url: str, tmp_path: Any, **over: Any) -> Settings:
    values: dict[str, Any] = {
        "home": tmp_path,
        "database_url": pg_url,
        "broker_url": redis_url,
        "api_keys_required": True,
    }
    values.update(over)
    return Settings(**values)


@pytest.fixture
def rds(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def settings(pg_url: str, redis_url: str, tmp_path: Any, rds: redis.Redis) -> Settings:
    return make_settings(pg_url, redis_url, tmp_path)


@pytest.fixture
def db(settings: Settings) -> Iterator[sa.orm.Session]:
    """A session on the test database; every table is emptied before the test."""
    maker = get_sessionmaker(settings)
    with maker() as session:
        tables = ", ".join(t.name for t in reversed(Base.metadata.sorted_tables))
        session.execute(sa.text(f"TRUNCATE {tables} CASCADE"))
        session.add(
            Problem(
                id=RELU_ID,
                name="relu",
                source=RELU_SOURCE,
                level=1,
                tags=["activation"],
                settings={},
                roofline={},
            )
        )
        session.commit()
        yield session


def new_key(session: sa.orm.Session, scopes: list[str] | None = None, **kw: Any) -> str:
    _, secret = create_key(session, kw.pop("name", "test"), scopes or ["submit", "read"], **kw)
    session.commit()
    return secret


@pytest.fixture
def app(settings: Settings, db: sa.orm.Session) -> FastAPI:
    return create_app(settings, startup=False)


@pytest.fixture
def key(db: sa.orm.Session) -> str:
    return new_key(db, ["submit", "read"], name="default")


@pytest.fixture
def client(app: FastAPI, key: str) -> Iterator[TestClient]:
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {key}"}) as c:
        yield c


def submission(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"problem_id": RELU_ID, "language": "cpp", "source": CPP_SOURCE, "target": "cpu"}
    body.update(over)
    return body


def queued_ids(rds: redis.Redis, queue: str = "eval.cpu") -> list[str]:
    """Submission ids waiting in a Celery queue on Redis (kombu keeps each queue as a list)."""
    import base64
    import json

    out = []
    for raw in rds.lrange(queue, 0, -1):
        msg = json.loads(raw)
        assert msg["headers"]["task"] == "kjudge.evaluate"
        args, _kwargs, _embed = json.loads(base64.b64decode(msg["body"]))
        out.append(args[0])
    return out
