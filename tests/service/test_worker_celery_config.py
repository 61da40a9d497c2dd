"""The reliability settings the issue requires are what the Celery app actually runs with."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("celery")  # the GPU machine runs the GPU tests without the service's packages
from core.celery_config import make_app  # noqa: E402
from core.settings import Settings  # noqa: E402
from worker.config import WorkerSettings  # noqa: E402


def test_reliability_settings(tmp_path: Path) -> None:
    app = make_app(Settings(home=tmp_path, broker_url="redis://127.0.0.1:6379/11"), WorkerSettings())
    conf = app.conf
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.worker_prefetch_multiplier == 1 and conf.worker_concurrency == 1
    assert 0 < conf.task_soft_time_limit < conf.task_time_limit
    assert conf.task_ignore_result  # PostgreSQL is the record, not a result backend
    # A running task's message must not be redelivered while it may still be running.
    assert conf.broker_transport_options["visibility_timeout"] > conf.task_time_limit


def test_embedded_broker_needs_no_server(tmp_path: Path) -> None:
    app = make_app(Settings(home=tmp_path), WorkerSettings())
    assert app.conf.broker_url == "filesystem://"
    opts = app.conf.broker_transport_options
    assert Path(opts["data_folder_in"]).is_dir() and Path(opts["control_folder"]).is_dir()
    # Round trip through the real transport: what the API sends, a worker can read.
    with app.connection_for_write() as conn:
        queue = conn.SimpleQueue("eval.cpu")
        queue.put({"id": "x"})
        assert queue.get(timeout=5).payload == {"id": "x"}
        queue.close()
