"""/v1/workers: every evaluation worker (the registry the workers heartbeat into) and drains."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from api.auth import Principal
from api.deps import SessionDep, require
from api.errors import ApiError
from api.routes.submissions import ERRORS
from api.schemas import DrainAccepted, WorkerInfo, WorkerList
from db import workers as registry

router = APIRouter(prefix="/v1/workers", tags=["workers"])


@router.get("", response_model=WorkerList, responses=ERRORS)
def list_workers(
    session: SessionDep,
    _: Annotated[Principal, Depends(require("read"))],
    include_offline: bool = True,
) -> WorkerList:
    """Host, GPU, target, status, current job, heartbeat age and evaluations of each worker."""
    views = registry.list_workers(session, include_offline=include_offline)
    return WorkerList(workers=[WorkerInfo(**registry.as_dict(v)) for v in views])


@router.post("/{worker_id}/drain", status_code=202, response_model=DrainAccepted, responses=ERRORS)
def drain_worker(
    worker_id: str,
    session: SessionDep,
    _: Annotated[Principal, Depends(require("admin"))],
) -> DrainAccepted:
    """The worker finishes its current job, takes no more and exits (within one heartbeat)."""
    if not registry.request_drain(session, worker_id):
        raise ApiError(404, "worker_not_found", f"no running worker {worker_id!r}; see GET /v1/workers")
    return DrainAccepted(id=worker_id, status="draining")
