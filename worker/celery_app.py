"""The workers' Celery application: `celery -A worker.celery_app worker` finds `app` here.

Configured as the API's publisher is (core.celery_config), with this worker's limits; it
includes worker.tasks, which only worker processes import.
"""

from __future__ import annotations

from core.celery_config import make_app
from worker.config import get_worker_settings

app = make_app(limits=get_worker_settings(), include=["worker.tasks"])
