"""kjudge.Client / AsyncClient and the submit, status, results, keys and db commands, against
a real uvicorn server on loopback (PostgreSQL + Redis, no worker: results are written here)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from api.app import create_app
from db.migrate import head_revision
from db.models import ResultRow, Submission
from evaluator.result import Result
from kjudge import AsyncClient, Client, KjudgeError
from tests.api.conftest import CPP_SOURCE, RELU_ID, make_settings, new_key, queued_ids, serve_app


@pytest.fixture(scope="module")
def live_url(pg_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    app = create_app(make_settings(pg_url, redis_url, tmp_path_factory.mktemp("live")), startup=False)
    with serve_app(app) as url:
        yield url


def _finish_later(db, sid: str, delay: float) -> threading.Timer:
    def finish() -> None:
        db.execute(sa.update(Submission).where(Submission.id == sid).values(status="done", verdict="correct"))
        db.add(
            ResultRow(
                submission_id=sid, result={"problem_id": RELU_ID, "verdict": "correct"}, speedup_vs_eager=1.1
            )
        )
        db.commit()

    timer = threading.Timer(delay, finish)
    timer.start()
    return timer


def test_sync_client(live_url, db, rds):
    key = new_key(db)
    with Client(live_url, key) as kj:
        ref = kj.submit(RELU_ID, CPP_SOURCE, "cpp", target="cpu", metadata={"model": "m", "run_id": "r"})
        assert ref.status == "queued" and queued_ids(rds) == [ref.id]
        timer = _finish_later(db, ref.id, 0.5)
        done = kj.wait(ref.id, timeout=20)
        timer.join()
        assert done.status == "done" and done.verdict == "correct" and done.result is not None
        # Typed, not a plain dict: `sub.result.profile`, `.speedup` as the SDK's docs say.
        assert isinstance(done.result, Result) and done.result.verdict == "correct", done.result

        batch = kj.submit_many(
            [
                {"problem_id": "relu", "language": "cpp", "source": f"// {i}\n", "target": "cpu"}
                for i in range(7)
            ]
        )
        assert batch.count == 7
        assert kj.batch(batch.id).status_counts == {"queued": 7}
        # results() follows the cursor over several pages.
        assert len(list(kj.results(limit=3))) == 8
        assert [s.id for s in kj.results(model="m")] == [ref.id]
        assert [p.name for p in kj.problems()] == ["relu"]
        assert kj.problem("relu").id == RELU_ID
        assert kj.leaderboard().entries[0].submission_id == ref.id

        with pytest.raises(KjudgeError) as err:
            kj.submit("nope", CPP_SOURCE, "cpp")
        assert err.value.status == 404 and err.value.code == "unknown_problem"
    with Client(live_url, "kj_wrong") as bad, pytest.raises(KjudgeError) as err:
        bad.get(ref.id)
    assert err.value.status == 401


def test_client_retry_keeps_one_submission(live_url, db):
    """The client's idempotency key makes a resent POST safe: same id, one row."""
    key = new_key(db)
    with Client(live_url, key) as kj:
        a = kj.submit(RELU_ID, CPP_SOURCE, "cpp", target="cpu", idempotency_key="fixed")
        b = kj.submit(RELU_ID, CPP_SOURCE, "cpp", target="cpu", idempotency_key="fixed")
    assert a.id == b.id and b.replayed
    db.rollback()
    assert db.scalar(sa.select(sa.func.count()).select_from(Submission)) == 1


def test_unreachable_server_is_a_clear_error():
    with Client("http://127.0.0.1:1", retries=1) as kj, pytest.raises(KjudgeError) as err:
        kj.get("x")
    assert err.value.status == 0 and "cannot reach kjudge" in str(err.value)


def test_async_client(live_url, db):
    key = new_key(db)

    async def main() -> None:
        async with AsyncClient(live_url, key) as kj:
            refs = await asyncio.gather(
                *[kj.submit(RELU_ID, f"// {i}\n", "cpp", target="cpu") for i in range(5)]
            )
            assert len({r.id for r in refs}) == 5
            timer = _finish_later(db, refs[0].id, 0.3)
            done = await kj.wait(refs[0].id, timeout=20)
            timer.join()
            assert done.verdict == "correct"
            batch = await kj.submit_many(
                [{"problem_id": RELU_ID, "language": "cpp", "source": "// b\n", "target": "cpu"}]
            )
            assert (await kj.batch(batch.id)).count == 1
            seen = [s.id async for s in kj.results(limit=2)]
            assert len(seen) == 6

    asyncio.run(main())


def _kjudge(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kjudge", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_cli_submit_status_results(live_url, db, tmp_path):
    key = new_key(db)
    kernel = tmp_path / "relu.cpp"
    kernel.write_text(CPP_SOURCE)
    env = {**os.environ, "KJUDGE_URL": live_url, "KJUDGE_API_KEY": key}
    r = _kjudge(
        "submit", "relu", str(kernel), "--target", "cpu", "--model", "cli", "--json", env=env, cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    sid = json.loads(r.stdout)["id"]
    timer = _finish_later(db, sid, 0.5)
    r = _kjudge("status", sid, "--wait", "10", env=env, cwd=tmp_path)
    timer.join()
    assert r.returncode == 0 and f"submission {sid}: done, verdict correct" in r.stdout
    r = _kjudge("results", "--model", "cli", "--json", env=env, cwd=tmp_path)
    assert [s["id"] for s in json.loads(r.stdout)] == [sid]
    r = _kjudge("submit", "no_such_problem", str(kernel), env=env, cwd=tmp_path)
    assert r.returncode == 1 and "unknown problem" in r.stderr and "Traceback" not in r.stderr
    r = _kjudge("submit", "relu", str(tmp_path / "missing.cu"), env=env, cwd=tmp_path)
    assert r.returncode == 1 and "no such kernel file" in r.stderr


def test_cli_db_upgrade_and_keys_from_any_directory(tmp_path):
    """`kjudge db upgrade` on the embedded default (SQLite in KJUDGE_HOME), run outside the repo."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")}
    env["KJUDGE_HOME"] = str(tmp_path / "home")
    r = _kjudge("db", "upgrade", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = _kjudge("db", "current", env=env, cwd=tmp_path)
    assert f"current {head_revision()}" in r.stdout
    r = _kjudge(
        "keys",
        "create",
        "--name",
        "ci",
        "--scopes",
        "submit,read",
        "--quota",
        "5",
        "--json",
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    created = json.loads(r.stdout)
    assert created["secret"].startswith("kj_")
    listed = json.loads(_kjudge("keys", "list", "--json", env=env, cwd=tmp_path).stdout)
    assert [k["quota"] for k in listed] == [5] and "secret" not in listed[0]
    assert _kjudge("keys", "revoke", created["id"], env=env, cwd=tmp_path).returncode == 0
    assert _kjudge("keys", "revoke", created["id"], env=env, cwd=tmp_path).returncode == 1
    r = _kjudge("keys", "create", "--name", "x", "--scopes", "root", env=env, cwd=tmp_path)
    assert r.returncode == 2 and "unknown scope" in r.stderr
    env["KJUDGE_DATABASE_URL"] = "postgresql+psycopg://postgres@127.0.0.1:1/none"
    r = _kjudge("db", "upgrade", env=env, cwd=tmp_path)
    assert r.returncode == 1 and "cannot reach" in r.stderr and "Traceback" not in r.stderr


def test_migration_matches_models(pg_url):
    """The Alembic head creates exactly the tables, columns and indexes db/models.py declares."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from db.models import Base

    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
            names = {
                r[0]
                for r in conn.execute(
                    sa.text("SELECT indexname FROM pg_indexes WHERE tablename='submissions'")
                )
            }
            assert "uq_submissions_idempotency" in names
    finally:
        engine.dispose()
