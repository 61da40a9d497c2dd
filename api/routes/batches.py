"""POST/GET /v1/batches: many submissions in one request, one transaction, one enqueue per id."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Query, Response
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session, defer, sessionmaker

from api.auth import Principal
from api.deps import (
    EnqueuerDep,
    ProblemCacheDep,
    QueueGateDep,
    SessionDep,
    SettingsDep,
    get_sessionmaker,
    require,
)
from api.errors import ApiError
from api.routes.submissions import ERRORS
from api.schemas import BatchAccepted, BatchCreate, BatchOut
from api.submitting import submit, without_results
from api.views import submission_out
from db.models import FINAL_STATUSES, Batch, ResultRow, Submission

router = APIRouter(prefix="/v1/batches", tags=["batches"])


@router.post("", status_code=202, response_model=BatchAccepted, responses=ERRORS)
async def create_batch(
    body: BatchCreate,
    response: Response,
    maker: Annotated[sessionmaker[Session], Depends(get_sessionmaker)],
    settings: SettingsDep,
    enqueuer: EnqueuerDep,
    problem_cache: ProblemCacheDep,
    gate: QueueGateDep,
    principal: Annotated[Principal, Depends(require("submit"))],
    include_result: Annotated[bool, Query(description="with `reuse`: answer with reused Results")] = False,
) -> BatchAccepted:
    """Accepts up to 1,000 submissions atomically: all are stored or none. An item's
    `client_request_id` makes a retried batch answer with the submissions stored the first time.
    With `?include_result=true` an item that `reuse` completed at once carries its Result (an RL
    reward of a kernel seen before then costs this one request)."""
    n = len(body.submissions)
    if n == 0:
        raise ApiError(422, "empty_batch", "submissions is empty: send at least one")
    if n > settings.max_batch_items:
        raise ApiError(
            413, "batch_too_large", f"the batch has {n} submissions; the limit is {settings.max_batch_items}"
        )
    keys = [item.client_request_id for item in body.submissions]
    batch_id, accepted = await run_in_threadpool(
        submit, maker, settings, enqueuer, problem_cache, gate, principal, body.submissions, keys, batch=True
    )
    if batch_id:
        response.headers["Location"] = f"/v1/batches/{batch_id}"
    if not include_result:
        accepted = without_results(accepted)
    return BatchAccepted(id=batch_id or "", count=len(accepted), submissions=accepted)


@router.get("/{batch_id}", response_model=BatchOut, responses=ERRORS)
def get_batch(
    batch_id: str,
    session: SessionDep,
    _: Annotated[Principal, Depends(require("read"))],
    include_result: bool = False,
) -> BatchOut:
    """A summary (counts per status and verdict) and every submission of the batch in order."""
    batch = session.get(Batch, batch_id)
    if batch is None:
        raise ApiError(404, "unknown_batch", f"no batch with id {batch_id!r}")
    q = (
        sa.select(Submission, ResultRow)
        .outerjoin(ResultRow, ResultRow.submission_id == Submission.id)
        .where(Submission.batch_id == batch_id)
        .order_by(Submission.batch_index, Submission.id)
        .options(defer(Submission.source))
    )
    if not include_result:
        q = q.options(defer(ResultRow.result))
    rows = session.execute(q).all()
    subs = [submission_out(s, result=r, include_result=include_result) for s, r in rows]
    statuses = Counter(s.status for s in subs)
    verdicts = Counter(s.verdict for s in subs if s.verdict)
    return BatchOut(
        id=batch.id,
        count=batch.count,
        created_at=batch.created_at,
        done=all(s.status in FINAL_STATUSES for s in subs),
        status_counts=dict(statuses),
        verdict_counts=dict(verdicts),
        submissions=subs,
    )
