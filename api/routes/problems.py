"""GET/POST /v1/problems: the problem library; operators add problems after a CPU dry run."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Query, Response
from sqlalchemy.orm import defer

from api.auth import Principal
from api.deps import SessionDep, SettingsDep, require
from api.errors import ApiError
from api.routes.submissions import ERRORS
from api.schemas import BaselineOut, ProblemBrief, ProblemCreate, ProblemOut, ProblemPage
from db.models import BaselineRow, Problem
from db.types import utcnow
from db.upsert import insert_ignore

router = APIRouter(prefix="/v1/problems", tags=["problems"])


def _brief(p: Problem) -> ProblemBrief:
    return ProblemBrief(id=p.id, name=p.name, level=p.level, tags=list(p.tags or []), created_at=p.created_at)


@router.get("", response_model=ProblemPage, responses=ERRORS)
def list_problems(
    session: SessionDep,
    _: Annotated[Principal, Depends(require("read"))],
    level: int | None = None,
    tag: str | None = None,
    name: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> ProblemPage:
    q = sa.select(Problem).options(defer(Problem.source))
    if level is not None:
        q = q.where(Problem.level == level)
    if name is not None:
        q = q.where(Problem.name == name)
    q = q.order_by(Problem.level.is_(None), Problem.level, Problem.name, Problem.id)
    problems = list(session.scalars(q))
    if tag is not None:  # tags are a JSON list; filter portably here (the library is small)
        problems = [p for p in problems if tag in (p.tags or [])]
    page = problems[offset : offset + limit]
    more = offset + limit < len(problems)
    return ProblemPage(items=[_brief(p) for p in page], next_offset=offset + limit if more else None)


def _find(session: SessionDep, ref: str) -> Problem:
    problem = session.get(Problem, ref)
    if problem is None:
        problem = session.scalars(
            sa.select(Problem).where(Problem.name == ref).order_by(Problem.created_at.desc()).limit(1)
        ).first()
    if problem is None:
        raise ApiError(404, "unknown_problem", f"unknown problem {ref!r}: GET /v1/problems lists them")
    return problem


def _detail(session: SessionDep, p: Problem) -> ProblemOut:
    baselines = session.scalars(
        sa.select(BaselineRow).where(BaselineRow.problem_id == p.id).order_by(BaselineRow.device)
    ).all()
    return ProblemOut(
        **_brief(p).model_dump(),
        source=p.source,
        settings=p.settings or {},
        roofline=p.roofline or {},
        baselines=[
            BaselineOut(
                device=b.device,
                torch_version=b.torch_version,
                eager_ms=b.eager_ms,
                compile_ms=b.compile_ms,
                measured_at=b.measured_at,
            )
            for b in baselines
        ],
    )


@router.get("/{problem_ref}", response_model=ProblemOut, responses=ERRORS)
def get_problem(
    problem_ref: str, session: SessionDep, _: Annotated[Principal, Depends(require("read"))]
) -> ProblemOut:
    """A problem by id or name, with its source, roofline data and baselines per device."""
    return _detail(session, _find(session, problem_ref))


def _plain(value: Any) -> Any:
    if value is None:
        return {}
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return dict(value)


@router.post("", status_code=201, response_model=ProblemOut, responses=ERRORS)
def create_problem(
    body: ProblemCreate,
    response: Response,
    session: SessionDep,
    settings: SettingsDep,
    _: Annotated[Principal, Depends(require("problems:write"))],
) -> ProblemOut:
    """Adds a problem after running it on the CPU at reduced size. The id is the sha256 of the
    source, so posting the same source again answers 200 with the stored problem."""
    size = len(body.source.encode("utf-8"))
    if size > settings.max_source_bytes:
        raise ApiError(
            413, "source_too_large", f"source is {size} bytes; the limit is {settings.max_source_bytes}"
        )
    pid = hashlib.sha256(body.source.encode("utf-8")).hexdigest()
    existing = session.get(Problem, pid)
    if existing is not None:
        response.status_code = 200
        return _detail(session, existing)
    try:
        from problems.catalog import ProblemRejected, validate_problem_source
    except ModuleNotFoundError:
        raise ApiError(
            503,
            "validation_unavailable",
            "problem validation (problems.catalog) is not installed on this server",
        ) from None
    session.rollback()  # no transaction held open during the dry run, which can take seconds
    try:
        info = validate_problem_source(body.source)
    except ProblemRejected as exc:
        raise ApiError(422, "problem_rejected", f"the problem did not pass its CPU dry run: {exc}") from None
    row = {
        "id": pid,
        "name": body.name,
        "source": body.source,
        "level": body.level if body.level is not None else getattr(info, "level", None),
        "tags": list(body.tags or getattr(info, "tags", None) or []),
        "settings": {**_plain(getattr(info, "settings", None)), **body.settings},
        "roofline": _plain(getattr(info, "roofline", None)),
        "builtin": False,
        "created_at": utcnow(),
    }
    insert_ignore(session, Problem, [row])
    session.commit()
    return _detail(session, session.get(Problem, pid))  # type: ignore[arg-type]
