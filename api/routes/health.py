"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api import cluster_metrics
from api.metrics import sample_submission_counts

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up (no dependency is checked)."""
    return {"status": "ok"}


def _check_db(request: Request) -> str:
    import sqlalchemy as sa

    try:
        with request.app.state.sessionmaker() as session:
            session.execute(sa.text("SELECT 1"))
        return "ok"
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return f"unavailable: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}"


def _check_broker(request: Request) -> str:
    try:
        request.app.state.enqueuer.ping()
        return "ok"
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return f"unavailable: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}"


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    """Ready when the database and the broker both answer; 503 otherwise, saying which failed."""
    checks = {"database": await run_in_threadpool(_check_db, request)}
    checks["broker"] = await run_in_threadpool(_check_broker, request)
    ok = all(v == "ok" for v in checks.values())
    return JSONResponse(
        {"status": "ok" if ok else "unavailable", "checks": checks}, status_code=200 if ok else 503
    )


def _sample(request: Request) -> None:
    sample_submission_counts(request.app.state.sessionmaker)
    settings = request.app.state.settings
    cluster_metrics.sample(request.app.state.sessionmaker, settings.effective_broker_url)


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    await run_in_threadpool(_sample, request)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
