"""POST/GET /v1/submissions: submit, fetch (with long-poll), list with filters and a cursor."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Annotated

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Header, Query, Request, Response
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
from api.schemas import ErrorBody, SubmissionAccepted, SubmissionCreate, SubmissionOut, SubmissionPage
from api.submitting import submit, without_results
from api.views import decode_cursor, encode_cursor, submission_out
from db.models import FINAL_STATUSES, ResultRow, Submission

router = APIRouter(prefix="/v1/submissions", tags=["submissions"])

ERRORS = {code: {"model": ErrorBody} for code in (400, 401, 403, 404, 409, 413, 422, 429, 503)}

# Long-poll: poll the database, starting fast and backing off (results arrive in seconds).
POLL_START_S = 0.1
POLL_MAX_S = 0.25


@router.post("", status_code=202, response_model=SubmissionAccepted, responses=ERRORS)
async def create_submission(
    body: SubmissionCreate,
    response: Response,
    maker: Annotated[sessionmaker[Session], Depends(get_sessionmaker)],
    settings: SettingsDep,
    enqueuer: EnqueuerDep,
    problem_cache: ProblemCacheDep,
    gate: QueueGateDep,
    principal: Annotated[Principal, Depends(require("submit"))],
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    include_result: Annotated[bool, Query(description="with `reuse`: answer with the reused Result")] = False,
) -> SubmissionAccepted:
    """Stores the submission (status `queued`), then enqueues it. A retried POST with the same
    `Idempotency-Key` answers with the first submission instead of creating a second."""
    # One thread-pool hop for all the blocking work (database and broker): the hot path of an
    # RL rollout, hundreds a second.
    items, keys = [body], [idempotency_key]
    _, stored = await run_in_threadpool(
        submit, maker, settings, enqueuer, problem_cache, gate, principal, items, keys, batch=False
    )
    accepted = stored[0]
    if accepted.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    response.headers["Location"] = f"/v1/submissions/{accepted.id}"
    return accepted if include_result else without_results([accepted])[0]


def _load(maker: sessionmaker[Session], sid: str, include_source: bool) -> SubmissionOut | None:
    with maker() as session:
        sub = session.get(Submission, sid)
        if sub is None:
            return None
        result = session.get(ResultRow, sid) if sub.status in FINAL_STATUSES else None
        return submission_out(sub, result=result, include_source=include_source)


def _status(maker: sessionmaker[Session], sid: str) -> str | None:
    with maker() as session:
        return session.scalar(sa.select(Submission.status).where(Submission.id == sid))


# Said on a long-poll that ended at the server's cap with the submission still unfinished: the
# client asked for longer, so it should ask again (the SDK's `Client.wait` loops).
WAIT_CAPPED_HEADER = "Kjudge-Wait-Capped"


@router.get(
    "/{submission_id}",
    response_model=SubmissionOut,
    responses={
        **ERRORS,
        200: {
            "headers": {
                WAIT_CAPPED_HEADER: {
                    "description": "present when `wait` was cut to the server's cap (its value, in "
                    "seconds) and the submission is not finished yet: ask again to keep waiting",
                    "schema": {"type": "number"},
                }
            }
        },
    },
)
async def get_submission(
    submission_id: str,
    request: Request,
    response: Response,
    maker: Annotated[sessionmaker[Session], Depends(get_sessionmaker)],
    _: Annotated[Principal, Depends(require("read"))],
    wait: Annotated[
        float,
        Query(
            ge=0,
            description="long-poll: wait up to this many seconds for done. The server caps one "
            "request at `long_poll_max_s` (60 s by default); a capped answer carries the "
            f"`{WAIT_CAPPED_HEADER}` header, and the client should ask again.",
        ),
    ] = 0,
    include_source: bool = False,
) -> SubmissionOut:
    """One submission with its Result once done. `?wait=S` holds the request until the
    submission is done (or errored) or S seconds pass. S is capped by the server (60 s by
    default): when the cap cut the wait short and the submission is still unfinished, the
    response carries `Kjudge-Wait-Capped: <cap>` so that the client loops."""
    cap = request.app.state.settings.long_poll_max_s
    deadline = time.monotonic() + min(wait, cap)
    delay = POLL_START_S
    status = await run_in_threadpool(_status, maker, submission_id)
    if status is None:
        raise ApiError(404, "unknown_submission", f"no submission with id {submission_id!r}")
    while status not in FINAL_STATUSES and time.monotonic() < deadline:
        if await request.is_disconnected():
            break
        await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 1.5, POLL_MAX_S)
        status = await run_in_threadpool(_status, maker, submission_id)
    out = await run_in_threadpool(_load, maker, submission_id, include_source)
    if out is None:
        raise ApiError(404, "unknown_submission", f"no submission with id {submission_id!r}")
    if wait > cap and out.status not in FINAL_STATUSES:
        response.headers[WAIT_CAPPED_HEADER] = f"{cap:g}"
    return out


@router.get("", response_model=SubmissionPage, responses=ERRORS)
def list_submissions(
    session: SessionDep,
    _: Annotated[Principal, Depends(require("read"))],
    problem_id: str | None = None,
    run_id: str | None = None,
    model: str | None = None,
    verdict: str | None = None,
    status: str | None = None,
    batch_id: str | None = None,
    language: str | None = None,
    target: Annotated[
        str | None, Query(description="the requested target: cpu, cuda, rocm, an arch, any")
    ] = None,
    since: Annotated[datetime | None, Query(description="created at or after (ISO 8601)")] = None,
    until: Annotated[datetime | None, Query(description="created before (ISO 8601)")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(description="next_cursor of the previous page")] = None,
    include_result: bool = False,
) -> SubmissionPage:
    """Newest first. The cursor is (created_at, id) of the last item, so pages stay stable while
    new submissions arrive."""
    q = sa.select(Submission, ResultRow).outerjoin(ResultRow, ResultRow.submission_id == Submission.id)
    q = q.options(defer(Submission.source))
    if not include_result:
        q = q.options(defer(ResultRow.result))
    for column, value in (
        (Submission.problem_id, problem_id),
        (Submission.run_id, run_id),
        (Submission.model, model),
        (Submission.verdict, verdict),
        (Submission.status, status),
        (Submission.batch_id, batch_id),
        (Submission.language, language),
        (Submission.target, target),
    ):
        if value is not None:
            q = q.where(column == value)
    if since is not None:
        q = q.where(Submission.created_at >= since)
    if until is not None:
        q = q.where(Submission.created_at < until)
    if cursor:
        c_at, c_id = decode_cursor(cursor)
        q = q.where(
            sa.or_(Submission.created_at < c_at, sa.and_(Submission.created_at == c_at, Submission.id < c_id))
        )
    q = q.order_by(Submission.created_at.desc(), Submission.id.desc()).limit(limit + 1)
    rows = session.execute(q).all()
    items = [submission_out(s, result=r, include_result=include_result) for s, r in rows[:limit]]
    next_cursor = None
    if len(rows) > limit:
        last = rows[limit - 1][0]
        next_cursor = encode_cursor(last.created_at, last.id)
    return SubmissionPage(items=items, next_cursor=next_cursor)
