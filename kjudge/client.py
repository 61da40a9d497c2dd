"""The kjudge HTTP client (httpx), sync and async.

    from kjudge import Client
    with Client("http://127.0.0.1:8000", api_key="kj_...") as kj:
        ref = kj.submit("relu", source, language="cpp", target="cpu", metadata={"model": "m"})
        sub = kj.wait(ref.id)
        print(sub.verdict, sub.result.speedup if sub.result else None)

`submit(..., profile=True)` asks for a hardware profile after a correct verdict: it arrives as
`sub.result.profile` (evaluator.profiling.models.Profile: per-kernel numbers and a one-line
`bottleneck`; `available` false with a `message` where none could be made).

Every submission carries an idempotency key (generated when not given), so the client retries
connection failures, 429 and 503 without ever creating a second submission.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from api.schemas import (
    BatchAccepted,
    BatchOut,
    Leaderboard,
    ProblemBrief,
    ProblemOut,
    ProblemPage,
    SubmissionAccepted,
    SubmissionOut,
    SubmissionPage,
)

DEFAULT_URL = "http://127.0.0.1:8000"
FINAL = ("done", "error")
RETRY_STATUSES = (429, 502, 503, 504)
LONG_POLL_S = 30.0


class KjudgeError(Exception):
    """An error answer from the API (or no answer at all: status 0)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}" if status else message)
        self.status = status
        self.code = code
        self.message = message


@dataclass
class _Call:
    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    retry: bool = True  # safe to send again (GETs, and POSTs that carry an idempotency key)
    timeout: float | None = None


def _error(response: httpx.Response) -> KjudgeError:
    try:
        err = response.json()["error"]
        return KjudgeError(response.status_code, err.get("code", "error"), err.get("message", ""))
    except (ValueError, KeyError, TypeError):
        return KjudgeError(response.status_code, "http_error", response.text[:500] or response.reason_phrase)


def _retry_delay(response: httpx.Response | None, attempt: int) -> float:
    if response is not None:
        after = response.headers.get("Retry-After", "")
        if after.isdigit():
            return min(float(after), 30.0)
    return min(0.5 * 2**attempt, 10.0)


def _result_param(include_result: bool) -> dict[str, Any]:
    return {"include_result": "true"} if include_result else {}


def _item(item: Mapping[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in dict(item).items() if v is not None}
    body.setdefault("client_request_id", str(uuid.uuid4()))
    return body


class _Base:
    def __init__(
        self, url: str | None = None, api_key: str | None = None, *, timeout: float = 30.0, retries: int = 4
    ) -> None:
        self.url = (url or os.environ.get("KJUDGE_URL") or DEFAULT_URL).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("KJUDGE_API_KEY")
        self.timeout = timeout
        self.retries = retries

    def _headers(self) -> dict[str, str]:
        h = {"User-Agent": "kjudge-client"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    # Request builders shared by the sync and async clients.
    @staticmethod
    def _submit_call(
        problem_id: str,
        source: str,
        language: str,
        target: str | None,
        entry: str | None,
        metadata: Mapping[str, Any] | None,
        reuse: bool,
        idempotency_key: str | None,
        profile: bool = False,
    ) -> _Call:
        body: dict[str, Any] = {
            "problem_id": problem_id,
            "language": language,
            "source": source,
            "reuse": reuse,
        }
        if target is not None:
            body["target"] = target
        if entry is not None:
            body["entry"] = entry
        if metadata:
            body["metadata"] = dict(metadata)
        if profile:
            body["profile"] = True
        return _Call(
            "POST",
            "/v1/submissions",
            json=body,
            headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())},
        )

    @staticmethod
    def _list_params(filters: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for k, v in filters.items():
            if v is None:
                continue
            out[k] = v.isoformat() if hasattr(v, "isoformat") else v
        return out


class Client(_Base):
    """Synchronous client."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(url, api_key, timeout=timeout, retries=retries)
        self._http = httpx.Client(
            base_url=self.url, headers=self._headers(), timeout=timeout, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: _Call) -> Any:
        attempts = self.retries + 1 if call.retry else 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    params=call.params or None,
                    json=call.json,
                    headers=call.headers,
                    timeout=call.timeout or self.timeout,
                )
            except httpx.TransportError as exc:
                if last:
                    raise KjudgeError(0, "unreachable", f"cannot reach kjudge at {self.url}: {exc}") from None
                time.sleep(_retry_delay(None, attempt))
                continue
            if response.status_code in RETRY_STATUSES and not last:
                time.sleep(_retry_delay(response, attempt))
                continue
            if response.status_code >= 400:
                raise _error(response)
            return response.json()
        raise AssertionError("unreachable")  # pragma: no cover

    def submit(
        self,
        problem_id: str,
        source: str,
        language: str,
        *,
        target: str | None = None,
        entry: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        reuse: bool = False,
        idempotency_key: str | None = None,
        profile: bool = False,
    ) -> SubmissionAccepted:
        call = self._submit_call(
            problem_id, source, language, target, entry, metadata, reuse, idempotency_key, profile
        )
        return SubmissionAccepted.model_validate(self._send(call))

    def submit_many(
        self, items: Iterable[Mapping[str, Any]], *, include_result: bool = False
    ) -> BatchAccepted:
        """One batch (at most 1,000 items, each a dict like submit's arguments). With
        include_result, items that `reuse` completed at once carry their Result."""
        body = {"submissions": [_item(i) for i in items]}
        call = _Call("POST", "/v1/batches", json=body, params=_result_param(include_result))
        return BatchAccepted.model_validate(self._send(call))

    def get(self, submission_id: str, *, wait: float = 0, include_source: bool = False) -> SubmissionOut:
        params: dict[str, Any] = {"wait": wait} if wait else {}
        if include_source:
            params["include_source"] = "true"
        call = _Call("GET", f"/v1/submissions/{submission_id}", params=params, timeout=self.timeout + wait)
        return SubmissionOut.model_validate(self._send(call))

    def wait(self, submission_id: str, timeout: float = 900.0) -> SubmissionOut:
        """Long-polls until the submission is done or errored; raises TimeoutError after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            sub = self.get(submission_id, wait=max(0.0, min(LONG_POLL_S, left)))
            if sub.status in FINAL:
                return sub
            if time.monotonic() >= deadline:
                raise TimeoutError(f"submission {submission_id} is still {sub.status} after {timeout:.0f} s")

    def batch(self, batch_id: str, *, include_result: bool = False) -> BatchOut:
        params = {"include_result": "true"} if include_result else {}
        return BatchOut.model_validate(self._send(_Call("GET", f"/v1/batches/{batch_id}", params=params)))

    def page(self, **filters: Any) -> SubmissionPage:
        call = _Call("GET", "/v1/submissions", params=self._list_params(filters))
        return SubmissionPage.model_validate(self._send(call))

    def results(self, **filters: Any) -> Iterator[SubmissionOut]:
        """Every submission matching the filters (problem_id, run_id, model, verdict, status,
        since, until, include_result), newest first, following the cursor page by page."""
        cursor = None
        while True:
            page = self.page(**filters, cursor=cursor)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def problems(self, *, level: int | None = None, tag: str | None = None) -> list[ProblemBrief]:
        params = self._list_params({"level": level, "tag": tag, "limit": 1000})
        return ProblemPage.model_validate(self._send(_Call("GET", "/v1/problems", params=params))).items

    def problem(self, ref: str) -> ProblemOut:
        return ProblemOut.model_validate(self._send(_Call("GET", f"/v1/problems/{ref}")))

    def create_problem(self, name: str, source: str, **fields: Any) -> ProblemOut:
        call = _Call("POST", "/v1/problems", json={"name": name, "source": source, **fields}, timeout=600)
        return ProblemOut.model_validate(self._send(call))

    def leaderboard(self, **filters: Any) -> Leaderboard:
        call = _Call("GET", "/v1/leaderboard", params=self._list_params(filters))
        return Leaderboard.model_validate(self._send(call))


class AsyncClient(_Base):
    """Asynchronous client (same methods as Client, awaitable)."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(url, api_key, timeout=timeout, retries=retries)
        self._http = httpx.AsyncClient(
            base_url=self.url, headers=self._headers(), timeout=timeout, transport=transport
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: _Call) -> Any:
        attempts = self.retries + 1 if call.retry else 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    params=call.params or None,
                    json=call.json,
                    headers=call.headers,
                    timeout=call.timeout or self.timeout,
                )
            except httpx.TransportError as exc:
                if last:
                    raise KjudgeError(0, "unreachable", f"cannot reach kjudge at {self.url}: {exc}") from None
                await asyncio.sleep(_retry_delay(None, attempt))
                continue
            if response.status_code in RETRY_STATUSES and not last:
                await asyncio.sleep(_retry_delay(response, attempt))
                continue
            if response.status_code >= 400:
                raise _error(response)
            return response.json()
        raise AssertionError("unreachable")  # pragma: no cover

    async def submit(
        self,
        problem_id: str,
        source: str,
        language: str,
        *,
        target: str | None = None,
        entry: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        reuse: bool = False,
        idempotency_key: str | None = None,
        profile: bool = False,
    ) -> SubmissionAccepted:
        call = self._submit_call(
            problem_id, source, language, target, entry, metadata, reuse, idempotency_key, profile
        )
        return SubmissionAccepted.model_validate(await self._send(call))

    async def submit_many(
        self, items: Iterable[Mapping[str, Any]], *, include_result: bool = False
    ) -> BatchAccepted:
        body = {"submissions": [_item(i) for i in items]}
        call = _Call("POST", "/v1/batches", json=body, params=_result_param(include_result))
        return BatchAccepted.model_validate(await self._send(call))

    async def get(
        self, submission_id: str, *, wait: float = 0, include_source: bool = False
    ) -> SubmissionOut:
        params: dict[str, Any] = {"wait": wait} if wait else {}
        if include_source:
            params["include_source"] = "true"
        call = _Call("GET", f"/v1/submissions/{submission_id}", params=params, timeout=self.timeout + wait)
        return SubmissionOut.model_validate(await self._send(call))

    async def wait(self, submission_id: str, timeout: float = 900.0) -> SubmissionOut:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            sub = await self.get(submission_id, wait=max(0.0, min(LONG_POLL_S, left)))
            if sub.status in FINAL:
                return sub
            if time.monotonic() >= deadline:
                raise TimeoutError(f"submission {submission_id} is still {sub.status} after {timeout:.0f} s")

    async def batch(self, batch_id: str, *, include_result: bool = False) -> BatchOut:
        params = {"include_result": "true"} if include_result else {}
        return BatchOut.model_validate(
            await self._send(_Call("GET", f"/v1/batches/{batch_id}", params=params))
        )

    async def page(self, **filters: Any) -> SubmissionPage:
        call = _Call("GET", "/v1/submissions", params=self._list_params(filters))
        return SubmissionPage.model_validate(await self._send(call))

    async def results(self, **filters: Any) -> AsyncIterator[SubmissionOut]:
        cursor = None
        while True:
            page = await self.page(**filters, cursor=cursor)
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def problems(self, *, level: int | None = None, tag: str | None = None) -> list[ProblemBrief]:
        params = self._list_params({"level": level, "tag": tag, "limit": 1000})
        return ProblemPage.model_validate(await self._send(_Call("GET", "/v1/problems", params=params))).items

    async def problem(self, ref: str) -> ProblemOut:
        return ProblemOut.model_validate(await self._send(_Call("GET", f"/v1/problems/{ref}")))

    async def create_problem(self, name: str, source: str, **fields: Any) -> ProblemOut:
        call = _Call("POST", "/v1/problems", json={"name": name, "source": source, **fields}, timeout=600)
        return ProblemOut.model_validate(await self._send(call))

    async def leaderboard(self, **filters: Any) -> Leaderboard:
        call = _Call("GET", "/v1/leaderboard", params=self._list_params(filters))
        return Leaderboard.model_validate(await self._send(call))
