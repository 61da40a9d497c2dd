"""Fixtures for the problem-library tests: a fresh PostgreSQL database for `problems import`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.databases import fresh_database


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A migrated database private to this session, dropped at the end."""
    with fresh_database("kjudge_problems", "problem import tests") as url:
        yield url
