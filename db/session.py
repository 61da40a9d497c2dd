"""Engines and sessions, one factory for api/ and worker/.

`get_sessionmaker()` is cached per database URL so every caller in a process shares one pool.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from core.settings import Settings, get_settings


def make_engine(
    url: str, *, pool_size: int = 10, max_overflow: int = 20, connect_timeout_s: int = 5
) -> Engine:
    """An engine tuned for the backend: pre-ping so the service recovers by itself after
    PostgreSQL restarts; WAL + busy timeout so the API and the local worker share SQLite."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        pool: dict[str, int] = {}
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            # The pool the settings ask for: SQLAlchemy's default for a file (5 + 10 overflow)
            # made 8 concurrent requests open and close overflow connections, PRAGMAs and all.
            pool = {"pool_size": pool_size, "max_overflow": max_overflow}
        engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **pool)

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        return engine
    connect_args = {"connect_timeout": connect_timeout_s} if url.startswith("postgresql") else {}
    return sa.create_engine(
        url,
        pool_pre_ping=True,
        pool_size=pool_size,
        max_overflow=max_overflow,
        pool_timeout=10,
        connect_args=connect_args,
    )


# SQLite admits one writer at a time; a second one waits in SQLite's busy handler, which sleeps
# in growing steps (up to 100 ms each) rather than waking when the lock is freed. Eight
# concurrent submits of ~1 ms each thus waited up to 0.5 s (bench/reward_overhead.py's p99).
# The writers of one process queue on this lock instead, which hands over at once; another
# process (the embedded worker, a few writes a minute) still meets the busy handler.
_sqlite_write_locks: dict[str, threading.Lock] = {}
_sqlite_write_locks_guard = threading.Lock()


def write_lock(session: Session) -> AbstractContextManager[object]:
    """Hold around a write transaction, from its first write to its commit or rollback: a lock
    shared by this process's writers of the same SQLite database; nothing for other databases
    (PostgreSQL takes concurrent writers)."""
    url = session.get_bind().engine.url
    if url.get_backend_name() != "sqlite":
        return nullcontext()
    with _sqlite_write_locks_guard:
        return _sqlite_write_locks.setdefault(str(url), threading.Lock())


@lru_cache(maxsize=8)
def _engine_for(url: str, pool_size: int, max_overflow: int, connect_timeout_s: int) -> Engine:
    return make_engine(
        url, pool_size=pool_size, max_overflow=max_overflow, connect_timeout_s=connect_timeout_s
    )


def get_engine(settings: Settings | None = None) -> Engine:
    s = settings or get_settings()
    return _engine_for(s.effective_database_url, s.db_pool_size, s.db_max_overflow, s.db_connect_timeout_s)


def get_sessionmaker(settings: Settings | None = None) -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(settings), expire_on_commit=False)


@contextmanager
def session_scope(settings: Settings | None = None) -> Iterator[Session]:
    """A session that commits on success and rolls back on any exception."""
    session = get_sessionmaker(settings)()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
