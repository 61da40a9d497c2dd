"""A fresh, migrated PostgreSQL database per test session (tests/api, tests/service, tests/problems).

Real PostgreSQL on 127.0.0.1:5432 (trust auth), as .ci/run starts it. Without it the suites skip
locally and fail under CI=true, so that CI never passes by skipping.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from typing import NoReturn

import pytest

PG_ADMIN_URL = os.environ.get(
    "KJUDGE_TEST_PG_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def unavailable(what: str, suite: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required for the {suite} (.ci/run starts it)")
    pytest.skip(f"{what} not reachable on 127.0.0.1")


@contextlib.contextmanager
def fresh_database(prefix: str, suite: str) -> Iterator[str]:
    """Create `<prefix>_<pid>_<random>`, migrate it with db.migrate.upgrade, yield its URL, drop it."""
    # Imported here: a GPU node without the service's dependencies still collects these suites.
    import sqlalchemy as sa

    from core.settings import Settings
    from db.migrate import upgrade

    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError:
        admin.dispose()
        unavailable("PostgreSQL", suite)
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    upgrade(Settings(database_url=url))
    try:
        yield url
    finally:
        from db.session import _engine_for

        _engine_for.cache_clear()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
