"""Database rows → response models, and the stable listing cursor."""

from __future__ import annotations

import base64
from datetime import datetime

from api.errors import ApiError
from api.schemas import SubmissionOut
from db.models import ResultRow, Submission


def submission_out(
    sub: Submission,
    *,
    result: ResultRow | None = None,
    speedup: float | None = None,
    median_ms: float | None = None,
    include_source: bool = False,
    include_result: bool = True,
) -> SubmissionOut:
    body = None
    if result is not None:
        speedup, median_ms = result.speedup_vs_eager, result.median_ms
        if include_result:
            body = dict(result.result)
            body.setdefault("id", sub.id)
    return SubmissionOut(
        id=sub.id,
        problem_id=sub.problem_id,
        language=sub.language,
        entry=sub.entry,
        target=sub.target,
        queue=sub.queue,
        status=sub.status,
        verdict=sub.verdict,
        message=sub.message,
        attempts=sub.attempts,
        worker=sub.worker,
        metadata=sub.meta or {},
        batch_id=sub.batch_id,
        reused_from=sub.reused_from,
        profile=bool(sub.profile),
        created_at=sub.created_at,
        started_at=sub.started_at,
        finished_at=sub.finished_at,
        speedup_vs_eager=speedup,
        median_ms=median_ms,
        source=sub.source if include_source else None,
        result=body,
    )


def encode_cursor(created_at: datetime, sid: str) -> str:
    raw = f"{created_at.isoformat()}|{sid}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, sid = raw.split("|", 1)
        return datetime.fromisoformat(stamp), sid
    except (ValueError, UnicodeDecodeError):
        raise ApiError(
            400, "invalid_cursor", "the cursor is not one this API issued; pass next_cursor unchanged"
        ) from None
