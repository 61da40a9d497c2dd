"""GET /v1/stats/...: the dashboard's aggregates (facets, per problem, per run, operations).

Thin: each route checks the caller and hands a session to api.stats, where the queries live.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api import stats
from api.auth import Principal
from api.deps import SessionDep, require
from api.errors import ApiError
from api.routes.submissions import ERRORS
from api.stats_schemas import Facets, Operations, ProblemStats, RunStats

router = APIRouter(prefix="/v1/stats", tags=["stats"])
Reader = Annotated[Principal, Depends(require("read"))]


@router.get("/facets", response_model=Facets, responses=ERRORS)
def facets(session: SessionDep, _: Reader) -> Facets:
    """Values for the submission filters: problems with submissions, recent models and run ids,
    languages, targets and verdicts."""
    return stats.facets(session)


@router.get("/problems/{problem_id}", response_model=ProblemStats, responses=ERRORS)
def problem(problem_id: str, session: SessionDep, _: Reader) -> ProblemStats:
    """Verdict counts and the speedup distribution of one problem's correct submissions."""
    out = stats.problem_stats(session, problem_id)
    if out is None:
        raise ApiError(404, "unknown_problem", f"no problem with id {problem_id!r}")
    return out


@router.get("/runs", response_model=RunStats, responses=ERRORS)
def run(session: SessionDep, _: Reader, model: str | None = None, run_id: str | None = None) -> RunStats:
    """Correctness rate and fast_p curve of the submissions of one model and/or run id (at
    least one of the two)."""
    if model is None and run_id is None:
        raise ApiError(400, "missing_filter", "pass model, run_id or both")
    return stats.run_stats(session, model=model, run_id=run_id)


@router.get("/operations", response_model=Operations, responses=ERRORS)
def operations(
    session: SessionDep,
    _: Reader,
    window_minutes: Annotated[int, Query(ge=1, le=1440)] = 60,
) -> Operations:
    """Queue depth per queue, workers with their current job and heartbeat age, and
    evaluations finished per minute."""
    return stats.operations(session, window_minutes=window_minutes)
