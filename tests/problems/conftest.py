"""Fixtures for the problem-library tests: a fresh PostgreSQL database for `problems import`."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

PG_ADMIN_URL = os.environ.get(
    "KJUDGE_TEST_PG_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A migrated database private to this session, dropped at the end."""
    from api.settings import Settings
    from db.migrate import upgrade

    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"kjudge_problems_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    except sa.exc.OperationalError:
        admin.dispose()
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is required for the problem import tests")
        pytest.skip("PostgreSQL not reachable on 127.0.0.1")
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
