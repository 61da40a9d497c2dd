"""The dashboard's aggregates: one function per endpoint, each a few grouped SQL queries.

Routes (api/routes/stats.py) stay thin and call these with a session. Nothing here loads
submission rows one by one: counts, histograms and per-problem bests are GROUP BY queries that
use the listing indexes (problem, run id, model) or `ix_submissions_finished`, so each endpoint
costs milliseconds with 100,000 submissions (bench/dashboard_load.py measures it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from api.stats_schemas import (
    Facets,
    FastPPoint,
    HistogramBin,
    Operations,
    ProblemName,
    ProblemStats,
    QueueDepth,
    RatePoint,
    RunStats,
    WorkerOut,
)
from db.models import Problem, ResultRow, Submission, WorkerRow
from db.types import utcnow
from evaluator.result import Language, Verdict

# Speedup histogram edges: fine around 1x (where most kernels land), coarse in the tail.
SPEEDUP_EDGES = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 8.0)
# fast_p is reported for p in [0, 4] (KernelBench's range), in steps of 0.05.
FAST_P_MAX = 4.0
FAST_P_STEP = 0.05
PENDING = ("queued", "compiling", "running")
FACET_LIMIT = 200
RECENT_TARGETS = 5000  # submissions whose targets the filter offers


def _distinct(session: Session, column: str) -> list[str]:
    """DISTINCT over an indexed column by skipping from value to value (a recursive CTE: one
    index probe per distinct value, instead of PostgreSQL's full scan: 2 ms vs ~100 ms at
    100,000 submissions). `column` is one of ours, never user input."""
    sql = sa.text(
        f"WITH RECURSIVE v(x) AS ("
        f" SELECT min({column}) FROM submissions"
        f" UNION ALL SELECT (SELECT min({column}) FROM submissions WHERE {column} > v.x) FROM v"
        f" WHERE v.x IS NOT NULL) "
        f"SELECT x FROM v WHERE x IS NOT NULL LIMIT {FACET_LIMIT}"
    )
    return [x for x in session.scalars(sql) if x]


def facets(session: Session) -> Facets:
    """Filter values, alphabetical. Models and run ids through their listing indexes; targets
    (no index of their own) from the most recent submissions."""
    has_submissions = sa.exists().where(Submission.problem_id == Problem.id)
    problems = session.execute(
        sa.select(Problem.id, Problem.name)
        .where(has_submissions)
        .order_by(Problem.name)
        .limit(FACET_LIMIT * 5)
    ).all()
    recent = (
        sa.select(Submission.target).order_by(Submission.created_at.desc()).limit(RECENT_TARGETS).subquery()
    )
    return Facets(
        problems=[ProblemName(id=pid, name=name) for pid, name in problems],
        models=_distinct(session, "model"),
        run_ids=_distinct(session, "run_id"),
        languages=[lang.value for lang in Language],
        targets=sorted(v for v in session.scalars(sa.select(recent.c.target).distinct()) if v),
        verdicts=[v.value for v in Verdict],
    )


def _bucket(speedup: sa.ColumnElement[float | None]) -> sa.ColumnElement[int]:
    """Index of the histogram bin a speedup falls in (CASE: portable to SQLite and PostgreSQL)."""
    whens = [(speedup < edge, i) for i, edge in enumerate(SPEEDUP_EDGES[1:])]
    return sa.case(*whens, else_=len(SPEEDUP_EDGES) - 1)


def speedup_histogram(counts: dict[int, int]) -> list[HistogramBin]:
    bins = []
    for i, lo in enumerate(SPEEDUP_EDGES):
        hi = SPEEDUP_EDGES[i + 1] if i + 1 < len(SPEEDUP_EDGES) else None
        bins.append(HistogramBin(lo=lo, hi=hi, count=counts.get(i, 0)))
    return bins


def problem_stats(session: Session, problem_id: str) -> ProblemStats | None:
    name = session.scalar(sa.select(Problem.name).where(Problem.id == problem_id))
    if name is None:
        return None
    by_problem = Submission.problem_id == problem_id
    total = session.scalar(sa.select(sa.func.count()).select_from(Submission).where(by_problem)) or 0
    verdicts = dict(
        session.execute(
            sa.select(Submission.verdict, sa.func.count())
            .where(by_problem, Submission.verdict.is_not(None))
            .group_by(Submission.verdict)
        ).all()
    )
    speedup = ResultRow.speedup_vs_eager
    correct = (
        sa.select(speedup.label("speedup"))
        .join(Submission, Submission.id == ResultRow.submission_id)
        .where(by_problem, Submission.verdict == "correct", Submission.reused_from.is_(None))
        .where(speedup.is_not(None))
        .subquery()
    )
    bucket = _bucket(correct.c.speedup).label("bucket")
    counts = dict(session.execute(sa.select(bucket, sa.func.count()).group_by(bucket)).all())
    best = session.scalar(sa.select(sa.func.max(correct.c.speedup)))
    return ProblemStats(
        problem_id=problem_id,
        problem_name=name,
        submissions=total,
        verdicts=verdicts,
        correct=verdicts.get("correct", 0),
        best_speedup=best,
        speedup_bins=speedup_histogram(counts),
    )


def fast_p_curve(best: Sequence[tuple[bool, float | None]], attempted: int) -> list[FastPPoint]:
    """fast_p for p = 0, 0.05, ..., 4: the fraction of `attempted` problems solved with speedup
    > p. `best` holds one (solved, best correct speedup) per attempted problem. fast_0 counts
    every solved problem, also one whose speedup is unknown (no baseline), as KernelBench's
    fast_0 is the correctness rate."""
    steps = round(FAST_P_MAX / FAST_P_STEP)
    points = []
    for k in range(steps + 1):
        p = round(k * FAST_P_STEP, 6)
        if attempted == 0:
            fraction = 0.0
        elif k == 0:
            fraction = sum(1 for solved, _ in best if solved) / attempted
        else:
            fraction = sum(1 for solved, s in best if solved and s is not None and s > p) / attempted
        points.append(FastPPoint(p=p, fraction=fraction))
    return points


def run_stats(session: Session, *, model: str | None, run_id: str | None) -> RunStats:
    where = []
    if model is not None:
        where.append(Submission.model == model)
    if run_id is not None:
        where.append(Submission.run_id == run_id)
    by_status = dict(
        session.execute(
            sa.select(Submission.status, sa.func.count()).where(*where).group_by(Submission.status)
        ).all()
    )
    verdicts = dict(
        session.execute(
            sa.select(Submission.verdict, sa.func.count())
            .where(*where, Submission.verdict.is_not(None))
            .group_by(Submission.verdict)
        ).all()
    )
    is_correct = Submission.verdict == "correct"
    per_problem = session.execute(
        sa.select(
            sa.func.max(sa.case((is_correct, 1), else_=0)),
            sa.func.max(sa.case((is_correct, ResultRow.speedup_vs_eager), else_=None)),
        )
        .select_from(Submission)
        .outerjoin(ResultRow, ResultRow.submission_id == Submission.id)
        .where(*where, Submission.verdict.is_not(None))
        .group_by(Submission.problem_id)
    ).all()
    best = [(bool(solved), speedup) for solved, speedup in per_problem]
    finished = sum(verdicts.values())
    correct = verdicts.get("correct", 0)
    return RunStats(
        model=model,
        run_id=run_id,
        submissions=sum(by_status.values()),
        finished=finished,
        pending=sum(by_status.get(s, 0) for s in PENDING),
        correct=correct,
        correctness_rate=correct / finished if finished else None,
        verdicts=verdicts,
        problems=len(best),
        problems_solved=sum(1 for solved, _ in best if solved),
        fast_p=fast_p_curve(best, len(best)),
    )


def _minute_index(session: Session, column: sa.ColumnElement[datetime]) -> sa.ColumnElement[int]:
    """Minutes since the epoch, in SQL (the two dialects spell it differently)."""
    if session.get_bind().dialect.name == "sqlite":
        return sa.cast(sa.func.strftime("%s", column), sa.Integer) // 60
    return sa.cast(sa.func.floor(sa.extract("epoch", column) / 60), sa.BigInteger)


def operations(session: Session, *, window_minutes: int = 60, now: datetime | None = None) -> Operations:
    now = now or utcnow()
    pending = session.execute(
        sa.select(Submission.queue, Submission.status, sa.func.count())
        .where(Submission.status.in_(PENDING))
        .group_by(Submission.queue, Submission.status)
    ).all()
    queues: dict[str, QueueDepth] = {}
    for queue, status, n in pending:
        depth = queues.setdefault(queue, QueueDepth(queue=queue, queued=0, running=0))
        if status == "queued":
            depth.queued += n
        else:
            depth.running += n

    # One current job per worker: the newest submission it holds that is still being evaluated.
    jobs: dict[str, tuple[str, str]] = {}
    for sid, worker, status in session.execute(
        sa.select(Submission.id, Submission.worker, Submission.status)
        .where(Submission.status.in_(("compiling", "running")), Submission.worker.is_not(None))
        .order_by(Submission.started_at)
    ):
        jobs[worker] = (sid, status)
    workers = []
    for row in session.scalars(sa.select(WorkerRow).order_by(WorkerRow.id)):
        target = row.target or {}
        job = jobs.get(row.id)
        workers.append(
            WorkerOut(
                id=row.id,
                queue=row.queue,
                status=row.status,
                backend=target.get("backend"),
                arch=target.get("arch"),
                device=target.get("device"),
                last_seen=row.last_seen,
                heartbeat_age_s=max(0.0, (now - row.last_seen).total_seconds()),
                current_job=job[0] if job else None,
                current_status=job[1] if job else None,
            )
        )

    start = now - timedelta(minutes=window_minutes)
    minute = _minute_index(session, Submission.finished_at).label("minute")
    per_minute = {
        int(m): n
        for m, n in session.execute(
            sa.select(minute, sa.func.count())
            .where(Submission.finished_at >= start, Submission.finished_at <= now)
            .group_by(minute)
        )
    }
    last = math.floor(now.timestamp() / 60)
    epoch = datetime.fromtimestamp(0, tz=now.tzinfo)
    rate = [
        RatePoint(minute=epoch + timedelta(minutes=m), count=int(per_minute.get(m, 0)))
        for m in range(last - window_minutes + 1, last + 1)
    ]
    return Operations(
        now=now,
        queues=sorted(queues.values(), key=lambda q: q.queue),
        workers=workers,
        evaluations_per_minute=rate,
        window_minutes=window_minutes,
    )
