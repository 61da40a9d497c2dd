"""Stored speedups follow a replaced baseline (db/speedups.py, worker/store.py: finish), on a real
PostgreSQL and on SQLite: the results measured against the old value get the new one, nothing
else is touched, and it happens in the transaction that stores the replacing result."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from core.settings import Settings
from db.migrate import upgrade
from db.models import Problem, ResultRow, Submission
from db.session import make_engine
from db.speedups import recompute_speedups
from evaluator.result import Backend, Baseline, Result, Speedup, Target, Timing, Verdict
from tests.databases import fresh_database
from worker import store

DEVICE = "NVIDIA H200"
TORCH = "2.9.0"


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[sa.Engine]:
    """A freshly migrated database of each kind."""
    if request.param == "postgresql":
        with fresh_database("kjudge_speedups", "service tests") as url:
            engine = make_engine(url, pool_size=2, max_overflow=0)
            yield engine
            engine.dispose()
    else:
        url = f"sqlite:///{tmp_path_factory.mktemp('speedups') / 'kjudge.db'}"
        upgrade(Settings(database_url=url))
        engine = make_engine(url)
        yield engine
        engine.dispose()


@pytest.fixture()
def session(engine: sa.Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as s:
        yield s


def _problem(engine: sa.Engine) -> str:
    source = f"# problem {uuid.uuid4()}\n"
    pid = hashlib.sha256(source.encode()).hexdigest()
    with engine.begin() as conn:
        conn.execute(
            sa.insert(Problem).values(id=pid, name="p", source=source, tags=[], settings={}, roofline={})
        )
    return pid


def _claim(engine: sa.Engine, session: Session, pid: str) -> store.Claim:
    sid = str(uuid.uuid4())
    with engine.begin() as conn:
        conn.execute(
            sa.insert(Submission).values(
                id=sid,
                problem_id=pid,
                language="triton",
                source="# candidate\n",
                source_sha256="0" * 64,
                target="cuda",
                queue="eval.cuda",
                metadata={},
                status="queued",
                attempts=0,
            )
        )
    claimed = store.claim(session, sid, worker_id="w:0", lease_s=60, max_attempts=3)
    assert isinstance(claimed, store.Claim)
    return claimed


def _result(
    pid: str,
    *,
    eager: float | None,
    compile_: float | None = None,
    median: float | None = 0.5,
    device: str = DEVICE,
    torch_version: str | None = TORCH,
    **baseline: Any,
) -> Result:
    """A Result as evaluate() builds it: speedups = baseline / the candidate's median."""
    timing = None
    speedup = None
    if median is not None:
        timing = Timing(median_ms=median, mean_ms=median, std_ms=0.0, min_ms=median, n=10, l2_flushed=True)
        speedup = Speedup(
            vs_eager=eager / median if eager else None, vs_compile=compile_ / median if compile_ else None
        )
    return Result(
        problem_id=pid,
        verdict=Verdict.CORRECT if median is not None else Verdict.INCORRECT,
        correct=median is not None,
        timing=timing,
        baseline=Baseline(eager_ms=eager, compile_ms=compile_, torch_version=torch_version, **baseline),
        speedup=speedup,
        target=Target(backend=Backend.CUDA, arch="sm_90", device=device),
    )


def _stored(engine: sa.Engine, session: Session, pid: str, result: Result) -> str:
    claimed = _claim(engine, session, pid)
    assert store.finish(session, claimed, result)
    return claimed.submission_id


def _row(engine: sa.Engine, sid: str) -> tuple[dict[str, Any], float | None]:
    with engine.connect() as conn:
        body, speedup = conn.execute(
            sa.select(ResultRow.result, ResultRow.speedup_vs_eager).where(ResultRow.submission_id == sid)
        ).one()
    return body, speedup


def test_recompute_speedups_revises_exactly_the_results_that_used_the_replaced_baseline(
    engine: sa.Engine, session: Session
) -> None:
    pid, other_problem = _problem(engine), _problem(engine)
    stored = {
        name: _stored(engine, session, problem, result)
        for name, problem, result in [
            ("used_it", pid, _result(pid, eager=2.0, compile_=1.0)),
            ("before_torch_version", pid, _result(pid, eager=2.0, compile_=1.0, torch_version=None)),
            ("incorrect", pid, _result(pid, eager=2.0, median=None)),
            ("other_value", pid, _result(pid, eager=2.5, compile_=1.0)),  # e.g. a contended one
            ("other_device", pid, _result(pid, eager=2.0, compile_=1.0, device="AMD Instinct MI300X")),
            ("other_torch", pid, _result(pid, eager=2.0, compile_=1.0, torch_version="2.8.0")),
            ("other_problem", other_problem, _result(other_problem, eager=2.0, compile_=1.0)),
        ]
    }
    before = {name: _row(engine, sid) for name, sid in stored.items()}
    revised = recompute_speedups(
        session,
        problem_id=pid,
        device=DEVICE,
        torch_version=TORCH,
        replaced={"eager": (2.0, 0.2)},
        revised_by="the-replacing-submission",
    )
    session.commit()
    assert revised == 3
    for name in ("used_it", "before_torch_version"):
        body, speedup = _row(engine, stored[name])
        assert body["baseline"]["eager_ms"] == 0.2 and body["baseline"]["replaced_eager_ms"] == 2.0
        assert body["baseline"]["revised_by"] == "the-replacing-submission"
        assert body["speedup"]["vs_eager"] == pytest.approx(0.4) and speedup == pytest.approx(0.4)
        # The compile baseline was not replaced: its value and speedup stand.
        assert body["baseline"]["compile_ms"] == 1.0 and body["speedup"]["vs_compile"] == pytest.approx(2.0)
        assert body["timing"]["median_ms"] == 0.5
        assert Result.model_validate(body).baseline is not None  # still a valid Result
    body, speedup = _row(engine, stored["incorrect"])
    assert body["baseline"]["eager_ms"] == 0.2 and body["speedup"] is None and speedup is None
    for name in ("other_value", "other_device", "other_torch", "other_problem"):
        assert _row(engine, stored[name]) == before[name], name


def test_finishing_a_remeasured_result_revises_earlier_ones_in_its_transaction(
    engine: sa.Engine, session: Session
) -> None:
    pid = _problem(engine)
    earlier = [
        _stored(engine, session, pid, _result(pid, eager=3.0, compile_=1.5, median=median))
        for median in (1.0, 0.5)
    ]
    replacing = _result(
        pid,
        eager=0.3,
        compile_=0.15,
        median=0.25,
        recheck="replaced",
        remeasured=True,
        replaced_eager_ms=3.0,
        replaced_compile_ms=1.5,
    )
    # A stale attempt's finish is refused, and revises nothing.
    stale = _claim(engine, session, pid)
    with engine.begin() as conn:
        conn.execute(sa.update(Submission).where(Submission.id == stale.submission_id).values(attempts=2))
    assert not store.finish(session, stale, replacing)
    assert [_row(engine, sid)[1] for sid in earlier] == [pytest.approx(3.0), pytest.approx(6.0)]

    claimed = _claim(engine, session, pid)
    assert store.finish(session, claimed, replacing)
    for sid, median in zip(earlier, (1.0, 0.5), strict=True):
        body, speedup = _row(engine, sid)
        assert speedup == pytest.approx(0.3 / median)
        assert body["speedup"] == {
            "vs_eager": pytest.approx(0.3 / median),
            "vs_compile": pytest.approx(0.15 / median),
        }
        assert (body["baseline"]["replaced_eager_ms"], body["baseline"]["replaced_compile_ms"]) == (3.0, 1.5)
        assert body["baseline"]["revised_by"] == claimed.submission_id
    body, speedup = _row(engine, claimed.submission_id)
    assert (
        speedup == pytest.approx(1.2)
        and body["baseline"]["remeasured"]
        and body["baseline"]["revised_by"] is None
    )
    # The leaderboard's order now compares like with like.
    with engine.connect() as conn:
        ranked = conn.execute(
            sa.select(ResultRow.submission_id)
            .join(Submission, Submission.id == ResultRow.submission_id)
            .where(Submission.problem_id == pid)
            .order_by(ResultRow.speedup_vs_eager.desc())
        ).scalars()
        assert list(ranked) == [claimed.submission_id, earlier[1], earlier[0]]
