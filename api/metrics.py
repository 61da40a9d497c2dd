"""Prometheus metrics: request counts and latencies by route, submissions by status.

Metrics are per process; with several uvicorn workers each exposes its own (scrape each, or
run prometheus_client's multiprocess mode).
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from prometheus_client import Counter, Gauge, Histogram
from sqlalchemy.orm import Session, sessionmaker
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from db.models import Submission

REQUESTS = Counter("kjudge_http_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram(
    "kjudge_http_request_seconds",
    "HTTP request latency",
    ["method", "route"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
SUBMISSIONS = Gauge("kjudge_submissions", "submissions by status (sampled at scrape)", ["status"])


class MetricsMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def _send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, _send)
        finally:
            route = scope.get("route")
            # The route template (not the raw path) keeps label cardinality bounded.
            path = getattr(route, "path", "unmatched")
            REQUESTS.labels(scope["method"], path, str(status)).inc()
            LATENCY.labels(scope["method"], path).observe(time.perf_counter() - start)


def sample_submission_counts(maker: sessionmaker[Session]) -> None:
    try:
        with maker() as session:
            rows = session.execute(
                sa.select(Submission.status, sa.func.count()).group_by(Submission.status)
            ).all()
    except Exception:  # noqa: BLE001 - a scrape must not fail because the database is down
        return
    counts = dict(rows)
    for status in ("queued", "compiling", "running", "done", "error"):
        SUBMISSIONS.labels(status).set(counts.get(status, 0))
