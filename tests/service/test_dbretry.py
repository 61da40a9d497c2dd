"""A worker's database write survives a PostgreSQL restart (worker/dbretry.py), against a
private PostgreSQL that the test stops and starts."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from bench.private_services import PrivatePostgres
from worker.dbretry import with_db_retry


@pytest.fixture()
def private_pg(tmp_path: Path):
    pg = PrivatePostgres(tmp_path)
    try:
        pg.init()
    except Exception as exc:  # no PostgreSQL binaries, or no postgres user to run them as
        pytest.skip(f"cannot start a private PostgreSQL: {exc}")
    yield pg
    pg.stop()


def test_a_write_waits_out_a_restart_and_gives_up_after_its_deadline(private_pg: PrivatePostgres) -> None:
    engine = sa.create_engine(private_pg.url, pool_pre_ping=True)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (n int)"))

    def write() -> int:
        with engine.begin() as conn:
            return conn.execute(sa.text("INSERT INTO t VALUES (1) RETURNING n")).scalar_one()

    private_pg._ctl("stop")
    with pytest.raises(sa.exc.OperationalError):
        with_db_retry(write, what="test", deadline_s=1.0)

    threading.Timer(2.0, private_pg.start).start()
    started = time.monotonic()
    assert with_db_retry(write, what="test", deadline_s=30.0) == 1
    assert time.monotonic() - started >= 1.5, "it should have waited for the restart"
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM t")).scalar_one() == 1, "written exactly once"
    engine.dispose()
