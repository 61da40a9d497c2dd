"""Run one database transaction again while PostgreSQL is briefly unreachable.

A PostgreSQL restart or failover takes seconds. Without a retry, an evaluation that finished
during one is lost (its lease then runs out and the job is evaluated again), and a status write
that fails mid-evaluation aborted the whole evaluation. Retrying is safe because every worker
write is a conditional statement fenced by the claim's attempt number: a repeated write that
already committed changes nothing the second time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import sqlalchemy as sa

log = logging.getLogger(__name__)

T = TypeVar("T")

# Errors that mean "could not talk to the database", not "the statement was wrong".
TRANSIENT = (sa.exc.OperationalError, sa.exc.InterfaceError)


def with_db_retry(fn: Callable[[], T], *, what: str, deadline_s: float = 20.0) -> T:
    """Calls fn (which opens its own session) until it succeeds or deadline_s has passed; the
    last error is raised. Backs off 0.5, 1, 2, 4 ... seconds."""
    deadline = time.monotonic() + deadline_s
    delay = 0.5
    while True:
        try:
            return fn()
        except TRANSIENT as exc:
            if time.monotonic() + delay > deadline:
                raise
            log.warning("%s: database unreachable (%s); retrying in %.1f s", what, type(exc).__name__, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
