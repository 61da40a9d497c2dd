"""The Celery app as kjudge configures it: the API's publisher and the workers run the same one.

Broker from `core.settings`, reliability settings from the issue; task and queue names are in
core.queues. The workers' app (worker/celery_app.py, `celery -A worker.celery_app worker`) adds the tasks
module, which only worker processes import (it pulls in torch through the evaluator); the API
only sends task messages by name (core.publish).

PostgreSQL is the record: there is no result backend, task return values are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from celery import Celery

from core.settings import Settings, TaskLimits, get_settings, get_task_limits


def celery_config(settings: Settings, limits: TaskLimits) -> dict[str, Any]:
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
        transport_options.setdefault("visibility_timeout", limits.hard_time_limit_s + 600)
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
        "task_soft_time_limit": limits.soft_time_limit_s,
        "task_time_limit": limits.hard_time_limit_s,
        # Queues are created on demand by name (core.queues); nothing goes to 'celery'.
        "task_create_missing_queues": True,
        "task_default_queue": "eval.any",
        "worker_hijack_root_logger": False,
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "broker_connection_timeout": 2.0,
    }


def make_app(
    settings: Settings | None = None, limits: TaskLimits | None = None, *, include: Sequence[str] = ()
) -> Celery:
    """`include`: the modules that define tasks, imported by a worker when it starts."""
    settings = settings or get_settings()
    limits = limits or get_task_limits()
    application = Celery("kjudge", include=list(include))
    application.conf.update(celery_config(settings, limits))
    return application


def _mkdir(path: str) -> None:
    from pathlib import Path

    Path(path).mkdir(parents=True, exist_ok=True)
