"""The FastAPI application factory.

`create_app()` wires settings, the database, the queue and the rate limiter onto `app.state`;
`uvicorn api.app:create_app --factory` serves it. Tests build apps with their own settings.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from api.auth import KeyCache
from api.backpressure import QueueGate
from api.errors import error_response, install_error_handlers
from api.metrics import MetricsMiddleware
from api.ratelimit import RateLimiter, make_rate_limiter
from api.routes import batches, health, leaderboard, problems, rewards, stats, submissions, workers
from api.submitting import ProblemCache
from core.publish import Enqueuer, make_enqueuer
from core.settings import Settings, get_settings
from db.session import get_sessionmaker, wal_checkpointer

log = logging.getLogger("kjudge.api")

STATIC = Path(__file__).with_name("static")
DASHBOARD = STATIC / "index.html"


class BodyLimitMiddleware:
    """Refuses bodies larger than the limit before they are read (413, JSON)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            length = dict(scope.get("headers") or []).get(b"content-length")
            if length is not None and length.isdigit() and int(length) > self.max_bytes:
                response = error_response(
                    413,
                    "body_too_large",
                    f"the request body is {int(length)} bytes; the limit is {self.max_bytes}",
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _startup(app: FastAPI) -> None:
    # The schema is migrated by `kjudge db upgrade` (or `kjudge serve`), never by API processes
    # racing each other at start.
    from db.seed import seed_builtin_problems

    try:
        with app.state.sessionmaker() as session:
            n = seed_builtin_problems(session)
        if n:
            log.info("loaded %d built-in problems", n)
    except Exception as exc:  # noqa: BLE001 - the API must start even while the database is down
        log.warning("could not load built-in problems now: %s", str(exc).splitlines()[0] if str(exc) else exc)
    _warm_pools(app)


def _warm_pools(app: FastAPI) -> None:
    """Opens the database pool's connections and the broker's producer before the first request,
    so that the first second of traffic after a start does not pay for them (it did: p99 of a
    fresh API at 100 POST/s was set by that second, up to 270 ms). Best effort."""
    settings: Settings = app.state.settings
    try:
        engine = app.state.sessionmaker.kw["bind"]
        connections = [engine.connect() for _ in range(min(settings.db_pool_size, 16))]
        for connection in connections:
            connection.close()
    except Exception as exc:  # noqa: BLE001 - a down database is reported by /readyz, not here
        log.warning("could not open database connections now: %s", exc)
    warm = getattr(app.state.enqueuer, "warm", None)
    if warm is not None:
        warm()


def create_app(
    settings: Settings | None = None,
    *,
    enqueuer: Enqueuer | None = None,
    rate_limiter: RateLimiter | None = None,
    startup: bool = True,
) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if startup:
            await run_in_threadpool(_startup, app)
            # What is alive now (modules, classes, routes: ~110k objects) lives as long as the
            # process. Out of the collector's sight, a full collection takes well under a ms
            # instead of 50-100 ms, a pause that stalled every request in flight under load.
            gc.collect()
            gc.freeze()
        with wal_checkpointer(app.state.sessionmaker.kw["bind"]):
            yield

    app = FastAPI(
        title="kjudge",
        version="0.1.0",
        description="An online judge for GPU kernels. Submit a kernel for a problem; get a verdict, "
        "correctness and timing against the PyTorch reference.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.sessionmaker = get_sessionmaker(settings)
    app.state.enqueuer = enqueuer or make_enqueuer(settings)
    app.state.rate_limiter = rate_limiter or make_rate_limiter(settings.effective_redis_url)
    app.state.key_cache = KeyCache(settings.api_key_cache_s)
    app.state.problem_cache = ProblemCache()
    app.state.queue_gate = QueueGate(settings)

    install_error_handlers(app)
    for module in (submissions, batches, problems, leaderboard, stats, workers, health, rewards):
        app.include_router(module.router)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def dashboard() -> HTMLResponse:
        return HTMLResponse(DASHBOARD.read_text(encoding="utf-8"))

    # The dashboard's script, styles and vendored libraries (no CDN: machines may be offline).
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(MetricsMiddleware)
    return app
