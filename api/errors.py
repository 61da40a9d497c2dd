"""One JSON error shape for every failure: `{"error": {"code": ..., "message": ...}}`.

Handlers turn validation errors, database outages and anything unexpected into that shape so a
client never sees a bare traceback or an HTML page.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import exc as sa_exc
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("kjudge.api")

DB_RETRY_AFTER_S = 5


class ApiError(Exception):
    """An answer other than success, raised anywhere below a route."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        details: Any = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.details = details


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, details: Any = None
) -> JSONResponse:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return JSONResponse({"error": body}, status_code=status, headers=headers)


_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limited",
    503: "unavailable",
}


def _location(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc if p != "body"]
    out = ""
    for p in parts:
        out += f"[{p}]" if p.isdigit() else (f".{p}" if out else p)
    return out or "body"


def _validation_response(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    whole_body = [e for e in errors if tuple(e.get("loc", ())) == ("body",)]
    if whole_body and whole_body[0].get("type") == "missing":
        return error_response(400, "missing_body", "the request needs a JSON body")
    content_type = request.headers.get("content-type", "")
    if whole_body and "json" not in content_type:
        # FastAPI does not parse a body that is not declared as JSON; say what to fix.
        return error_response(
            400, "malformed_json", "the request body must be JSON sent with Content-Type: application/json"
        )
    # Unparseable JSON is a 400 (the request is not JSON at all); wrong fields and types are 422.
    if any(e.get("type") == "json_invalid" for e in errors):
        ctx = next(e for e in errors if e.get("type") == "json_invalid").get("ctx", {})
        return error_response(
            400, "malformed_json", f"the request body is not valid JSON: {ctx.get('error', 'parse error')}"
        )
    details = [{"field": _location(e.get("loc", ())), "message": e.get("msg", "")} for e in errors]
    summary = "; ".join(f"{d['field']}: {d['message']}" for d in details[:5])
    if len(details) > 5:
        summary += f"; and {len(details) - 5} more"
    return error_response(
        422, "invalid_request", summary, details=json.loads(json.dumps(details, default=str))
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.headers, exc.details)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_response(request, exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code
        if exc.status_code == 404 and message == "Not Found":
            message = "no such endpoint: see /docs for the API"
        return error_response(exc.status_code, code, message, dict(exc.headers or {}))

    # PostgreSQL down, a dropped connection or an exhausted pool: tell the client to retry. The
    # engine pre-pings, so the next request after the database returns succeeds by itself.
    @app.exception_handler(sa_exc.OperationalError)
    @app.exception_handler(sa_exc.InterfaceError)
    @app.exception_handler(sa_exc.TimeoutError)
    async def _db_down(_: Request, exc: Exception) -> JSONResponse:
        log.warning("database unavailable: %s", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return error_response(
            503,
            "database_unavailable",
            "the database is unavailable; retry shortly",
            {"Retry-After": str(DB_RETRY_AFTER_S)},
        )

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return error_response(500, "internal_error", "kjudge failed to handle this request; it was logged")
