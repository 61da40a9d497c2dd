"""The Celery application: broker from `api.settings`, reliability settings from the issue.

`celery -A worker.celery_app worker` finds `app` here. The evaluate task lives in worker.tasks,
which only worker processes import (it pulls in torch through the evaluator); the API only
sends task messages by name and never imports it.

PostgreSQL is the record: there is no result backend, task return values are ignored.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from core.settings import Settings, get_settings
from worker.config import WorkerSettings, get_worker_settings

TASK_NAME = "kjudge.evaluate"
# The run stage of a pipelined host (worker/pipeline.py): sent by its compile pool only.
RUN_TASK_NAME = "kjudge.run"


def celery_config(settings: Settings, wsettings: WorkerSettings) -> dict[str, Any]:
    transport_options: dict[str, Any] = dict(settings.broker_transport_options)
    broker = settings.effective_broker_url
    if broker.startswith("filesystem"):
        for key in ("data_folder_in", "data_folder_out", "processed_folder"):
            # kombu does not create them; the API and the worker may each be first to start.
            _mkdir(transport_options[key])
        transport_options.setdefault("control_folder", str(settings.broker_dir / "control"))
        _mkdir(transport_options["control_folder"])
        # The filesystem transport polls; a short interval keeps embedded latency low.
        transport_options.setdefault("polling_interval", 0.2)
    elif broker.startswith(("redis://", "rediss://")):
        # An unacked message is redelivered after this; it must outlast the longest task or a
        # running evaluation would be delivered twice (harmless, the claim refuses it, but wasteful).
        transport_options.setdefault("visibility_timeout", wsettings.hard_time_limit_s + 600)
    return {
        "broker_url": broker,
        "broker_transport_options": transport_options,
        "broker_connection_retry_on_startup": True,
        "broker_connection_max_retries": None,  # ride out broker restarts forever
        "task_ignore_result": True,
        "result_backend": None,
        "task_serializer": "json",
        "accept_content": ["json"],
        # Reliability: ack after the task finished; a killed pool process puts the message back.
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "worker_concurrency": 1,
        "task_soft_time_limit": wsettings.soft_time_limit_s,
        "task_time_limit": wsettings.hard_time_limit_s,
        # Queues are created on demand by name (worker.routing); nothing goes to 'celery'.
        "task_create_missing_queues": True,
        "task_default_queue": "eval.any",
        "worker_hijack_root_logger": False,
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "broker_connection_timeout": 2.0,
    }


def make_app(settings: Settings | None = None, wsettings: WorkerSettings | None = None) -> Celery:
    settings = settings or get_settings()
    wsettings = wsettings or get_worker_settings()
    application = Celery("kjudge", include=["worker.tasks"])
    application.conf.update(celery_config(settings, wsettings))
    return application


def _mkdir(path: str) -> None:
    from pathlib import Path

    Path(path).mkdir(parents=True, exist_ok=True)


app = make_app()
