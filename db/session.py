"""Engines and sessions, one factory for api/ and worker/.

`get_sessionmaker()` is cached per database URL so every caller in a process shares one pool.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from core.settings import Settings, get_settings

log = logging.getLogger("kjudge.db")


WAL_AUTOCHECKPOINT_PAGES = 40_000  # 160 MiB of 4 KiB pages


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
            # SQLite checkpoints the WAL inside the commit that takes it past this many pages
            # (default 1000: ~40 submits). The API checkpoints it from a thread of its own
            # (WalCheckpointer) and keeps it below this; without one, commits still do.
            cur.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
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


class WalCheckpointer:
    """Checkpoints a SQLite database's WAL from a daemon thread while the block runs, for the
    process that writes it most (the API).

    A checkpoint copies the WAL's pages into the database file and fsyncs both. Left to SQLite,
    it runs inside the commit that takes the WAL past its size limit (1000 pages by default,
    about one submit in 40): that request waited 10-90 ms (an fsync on this shared VM waits for
    the whole filesystem's journal), and so did every writer queued behind it. A PASSIVE
    checkpoint takes no lock that writers wait for, so run here it keeps the copying and its
    fsyncs off the requests. Every few seconds, not more often: the first commit after each
    complete checkpoint starts the WAL over and fsyncs its header, which no writer can avoid;
    checkpointing every 0.5 s instead cost the reward bench one such 50-130 ms stall per second.
    Meanwhile the WAL grows (a submit writes ~20 pages, a row and its indexes' leaves: 2 s at
    500 submits/s is 20,000 pages) below WAL_AUTOCHECKPOINT_PAGES, where SQLite's own
    checkpoint remains the fallback."""

    def __init__(self, engine: Engine, interval_s: float = 2.0) -> None:
        self._path = engine.url.database or ""
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kjudge-wal-checkpoint", daemon=True)

    def __enter__(self) -> WalCheckpointer:
        if self._path and self._path != ":memory:":
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        while not self._stop.wait(self._interval):
            try:
                if conn is None:
                    # A connection of its own: the thread would otherwise hold one of the pool's.
                    conn = sqlite3.connect(self._path, timeout=0, check_same_thread=False)
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as exc:  # e.g. the file is not there yet: try again next time
                log.debug("WAL checkpoint failed: %s", exc)
        if conn is not None:
            conn.close()


def wal_checkpointer(engine: Engine) -> AbstractContextManager[object]:
    """A WalCheckpointer for a SQLite engine; nothing for other databases."""
    return WalCheckpointer(engine) if engine.url.get_backend_name() == "sqlite" else nullcontext()


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
