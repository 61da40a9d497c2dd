"""GET /v1/leaderboard: the best correct submission per (problem, model), fastest first."""

from __future__ import annotations

from typing import Annotated

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Query

from api.auth import Principal
from api.deps import SessionDep, require
from api.routes.submissions import ERRORS
from api.schemas import Leaderboard, LeaderboardEntry
from db.models import Problem, ResultRow, Submission

router = APIRouter(prefix="/v1/leaderboard", tags=["leaderboard"])


@router.get("", response_model=Leaderboard, responses=ERRORS)
def leaderboard(
    session: SessionDep,
    _: Annotated[Principal, Depends(require("read"))],
    problem_id: str | None = None,
    target: str | None = None,
    run_id: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Leaderboard:
    """Only verdict `correct` counts (flagged or rejected results never rank). A reused result
    counts once, under its original submission."""
    best = sa.func.row_number().over(
        partition_by=(Submission.problem_id, Submission.model),
        order_by=(ResultRow.speedup_vs_eager.desc().nulls_last(), Submission.created_at),
    )
    inner = (
        sa.select(
            Submission.id,
            Submission.problem_id,
            Submission.model,
            Submission.target,
            Submission.created_at,
            ResultRow.speedup_vs_eager,
            ResultRow.median_ms,
            best.label("pos"),
        )
        .join(ResultRow, ResultRow.submission_id == Submission.id)
        .where(Submission.verdict == "correct", Submission.reused_from.is_(None))
    )
    if problem_id is not None:
        inner = inner.where(Submission.problem_id == problem_id)
    if target is not None:
        inner = inner.where(Submission.target == target)
    if run_id is not None:
        inner = inner.where(Submission.run_id == run_id)
    sub = inner.subquery()
    q = (
        sa.select(sub, Problem.name)
        .join(Problem, Problem.id == sub.c.problem_id)
        .where(sub.c.pos == 1)
        .order_by(sub.c.speedup_vs_eager.desc().nulls_last(), sub.c.created_at)
        .limit(limit)
    )
    entries = [
        LeaderboardEntry(
            rank=i + 1,
            problem_id=row.problem_id,
            problem_name=row.name,
            model=row.model,
            submission_id=row.id,
            target=row.target,
            speedup_vs_eager=row.speedup_vs_eager,
            median_ms=row.median_ms,
            created_at=row.created_at,
        )
        for i, row in enumerate(session.execute(q))
    ]
    return Leaderboard(entries=entries)
