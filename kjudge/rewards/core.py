"""Scoring completions against a kjudge server: extract → submit (one batch) → wait → shape.

Shared by every framework adaptor (verl.py, trl.py). Each call submits the completions that hold
code as one batch (`POST /v1/batches`: accepted whole or refused whole; on 429 the client waits
Retry-After and sends the same batch again), waits for the results (a long-poll per submission
for a few, the batch's summary for many), and shapes each result with evaluator.reward.shape.
Calls made at the same time on one client (per-sample rewards awaited together) share their
POSTs: see _Coalescer.

What goes wrong on kjudge's side — the server unreachable or refusing after the client's
retries, the wait running out, status `error`, no verdict — becomes an `infra_error` Reward
(score None) and is counted and logged here, never a kernel's low score.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from api.schemas import BatchAccepted, SubmissionOut
from evaluator.extract import extract_code
from evaluator.reward import Outcome, Reward, RewardConfig, infra_error, no_code, shape
from kjudge.client import FINAL, AsyncClient, KjudgeError

log = logging.getLogger("kjudge.rewards")

CONFIG_ENV = "KJUDGE_REWARD_CONFIG"  # JSON object of RewardConfig fields
PER_ID_WAIT_MAX = 8  # up to this many pending submissions are long-polled one by one
BATCH_POLL_START_S, BATCH_POLL_MAX_S = 0.25, 2.0
# Per client; calls made meanwhile wait and go together in the next POST. One: on the 2-core VM
# at 8 calls in flight, 1 gave ~600 calls/s and 2 or 3 gave ~450-550 and ~350-500 (smaller
# POSTs, more of their fixed cost per call).
POSTS_IN_FLIGHT = 1
COALESCE_MAX_ITEMS = 1000  # the server's batch limit (Settings.max_batch_items)

T = TypeVar("T")


@dataclass
class Item:
    """One completion to score."""

    completion: str
    problem: str
    language: str | None = None
    target: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


# --- counting: how often kjudge, not the kernel, failed ------------------------------------------
_lock = threading.Lock()
_counts: collections.Counter[str] = collections.Counter()


def stats() -> dict[str, int]:
    """Rewards computed in this process by outcome (`infra_error` among them)."""
    with _lock:
        return dict(_counts)


def _count(rewards: Sequence[Reward]) -> None:
    with _lock:
        _counts.update(r.outcome.value for r in rewards)
        infra = _counts[Outcome.INFRA_ERROR.value]
    for r in rewards:
        if r.infra_error:
            log.warning(
                "kjudge reward: infrastructure error #%d, not scored as the kernel's: %s", infra, r.message
            )


_warned: set[tuple[str, ...]] = set()


def load_config(config: RewardConfig | None = None, **overrides: Any) -> RewardConfig:
    """`config`, else RewardConfig from $KJUDGE_REWARD_CONFIG (JSON) or defaults; then overrides."""
    if config is None:
        raw = os.environ.get(CONFIG_ENV)
        config = RewardConfig.model_validate(json.loads(raw)) if raw else RewardConfig()
    known = {k: v for k, v in overrides.items() if k in RewardConfig.model_fields}
    unknown = sorted(set(overrides) - set(known))
    if unknown and tuple(unknown) not in _warned:
        # Frameworks pass keywords of their own (verl: sandbox_fusion_url, ...): ignored, said once.
        _warned.add(tuple(unknown))
        log.warning("kjudge reward: ignoring keyword arguments that are not RewardConfig fields: %s", unknown)
    return config.model_copy(update=known) if known else config


# --- one client per event loop (an httpx.AsyncClient's connections belong to one loop) ----------
_clients: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str | None, str | None], AsyncClient]
]
_clients = weakref.WeakKeyDictionary()


def client_for(url: str | None = None, api_key: str | None = None, retries: int = 6) -> AsyncClient:
    loop = asyncio.get_running_loop()
    per_loop = _clients.setdefault(loop, {})
    key = (url or os.environ.get("KJUDGE_URL"), api_key or os.environ.get("KJUDGE_API_KEY"), retries)
    client = per_loop.get(key)
    if client is None:
        client = per_loop[key] = AsyncClient(key[0], key[1], retries=retries)
    return client


class _LoopThread:
    """A private event loop on a daemon thread, for the synchronous entry points: they may be
    called from a thread that already runs a loop (asyncio.run would refuse there), and one
    long-lived loop keeps the client's connections open between calls."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="kjudge-rewards", daemon=True).start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()


_sync_loop = _LoopThread()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    return _sync_loop.run(coro)


# --- submitting: concurrent calls share POSTs -----------------------------------------------------
class _Coalescer:
    """Sends the submissions of concurrent calls on one client as shared `POST /v1/batches`.

    A trainer that awaits per-sample rewards together (TRL's async reward functions, verl's
    async loop) makes many one-item calls at once. Sent one POST each, they paid the request's
    fixed cost (HTTP, routing, a transaction and its commit: ~2.5 ms of server CPU) per sample,
    and eight in flight queued behind each other in the API. Here at most POSTS_IN_FLIGHT POSTs
    are out per client; a call made meanwhile waits for the next one and goes in it together
    with the others that came meanwhile. A call alone is sent on the loop's next turn: nothing
    waits for a timer. (What holds one POST back, a 429's Retry-After or a retried connection, holds the
    calls behind it too; they would have met the same server.)

    A batch is accepted or refused whole, so one call's bad item (an unknown problem, a source
    too large) would refuse its neighbours: a refused shared POST is sent again one call per
    POST, so that each call gets its own answer. Items carry their idempotency keys
    (client_request_id) from the start, so a POST sent again never stores anything twice."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._waiting: collections.deque[tuple[list[dict[str, Any]], asyncio.Future[BatchAccepted]]]
        self._waiting = collections.deque()
        self._in_flight = 0
        self._pump_scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, bodies: list[dict[str, Any]]) -> BatchAccepted:
        """The batch answer for `bodies` alone (their submissions, in order)."""
        for body in bodies:
            body.setdefault("client_request_id", str(uuid.uuid4()))
        future: asyncio.Future[BatchAccepted] = asyncio.get_running_loop().create_future()
        self._waiting.append((bodies, future))
        self._schedule_pump()
        return await future

    def _schedule_pump(self) -> None:
        # On the loop's next turn, not now: calls started together (a gather of per-sample
        # rewards, or the callers of the POST that just came back starting their next calls)
        # reach here one after another in the same turn. Sending the first at once made POSTs
        # of 1 and 7 alternate at 8 in flight, twice the POSTs of 8.
        if not self._pump_scheduled:
            self._pump_scheduled = True
            asyncio.get_running_loop().call_soon(self._pump)

    def _pump(self) -> None:
        self._pump_scheduled = False
        while self._waiting and self._in_flight < POSTS_IN_FLIGHT:
            group = [self._waiting.popleft()]
            n = len(group[0][0])
            while self._waiting and n + len(self._waiting[0][0]) <= COALESCE_MAX_ITEMS:
                group.append(self._waiting.popleft())
                n += len(group[-1][0])
            self._in_flight += 1
            task = asyncio.get_running_loop().create_task(self._send(group))
            self._tasks.add(task)  # a reference until it ends: the loop keeps only weak ones
            task.add_done_callback(self._tasks.discard)

    async def _send(self, group: list[tuple[list[dict[str, Any]], asyncio.Future[BatchAccepted]]]) -> None:
        try:
            await self._post(group)
        except Exception as exc:  # each call handles it as it did its own POST's
            for _, future in group:
                if not future.done():
                    future.set_exception(exc)
        except BaseException:  # cancelled (the loop is closing): so are the calls waiting on it
            self._in_flight -= 1
            for _, future in group:
                future.cancel()
            raise
        self._in_flight -= 1
        self._schedule_pump()

    async def _post(self, group: list[tuple[list[dict[str, Any]], asyncio.Future[BatchAccepted]]]) -> None:
        try:
            accepted = await self._client.submit_many(
                [body for bodies, _ in group for body in bodies], include_result=True
            )
        except KjudgeError as exc:
            if len(group) == 1 or not 400 <= exc.status < 500 or exc.status == 429:
                raise
            # Refused whole, maybe for one call's item: each call on its own.
            answers = await asyncio.gather(
                *(self._client.submit_many(bodies, include_result=True) for bodies, _ in group),
                return_exceptions=True,
            )
            for (_, future), answer in zip(group, answers, strict=True):
                if future.done():  # its caller was cancelled
                    continue
                if isinstance(answer, BaseException):
                    future.set_exception(answer)
                else:
                    future.set_result(answer)
            return
        if len(accepted.submissions) != sum(len(bodies) for bodies, _ in group):
            raise KjudgeError(
                0, "bad_answer", f"the batch answer has {len(accepted.submissions)} submissions"
            )
        start = 0
        for bodies, future in group:
            mine = accepted.submissions[start : start + len(bodies)]
            start += len(bodies)
            if not future.done():  # its caller was cancelled
                future.set_result(BatchAccepted(id=accepted.id, count=len(mine), submissions=mine))


_coalescers: weakref.WeakKeyDictionary[AsyncClient, _Coalescer] = weakref.WeakKeyDictionary()


def _coalescer_for(client: AsyncClient) -> _Coalescer:
    # A client serves one event loop (client_for), and so does its coalescer.
    coalescer = _coalescers.get(client)
    if coalescer is None:
        coalescer = _coalescers[client] = _Coalescer(client)
    return coalescer


# --- scoring ----------------------------------------------------------------------------------
async def score_items(
    items: Sequence[Item],
    config: RewardConfig | None = None,
    *,
    client: AsyncClient | None = None,
) -> list[Reward]:
    """One Reward per item, in order. Never raises for kjudge's failures (they are infra errors)."""
    config = config or load_config()
    out: list[Reward | None] = [None] * len(items)
    bodies: list[dict[str, Any]] = []
    where: list[int] = []
    for i, item in enumerate(items):
        code = extract_code(item.completion, item.language)  # an unknown language name raises
        if code is None:
            out[i] = no_code(config)
            continue
        body: dict[str, Any] = {
            "problem_id": item.problem,
            "language": code.language.value,
            "source": code.source,
            "reuse": config.reuse,
            "metadata": item.metadata,
        }
        if item.target or config.target:
            body["target"] = item.target or config.target
        bodies.append(body)
        where.append(i)
    if bodies:
        for i, reward in zip(
            where,
            await _evaluate(bodies, config, client or client_for(retries=config.client_retries)),
            strict=True,
        ):
            out[i] = reward
    rewards = [r for r in out if r is not None]
    _count(rewards)
    return rewards


@dataclass(frozen=True)
class _Final:
    status: str
    result: Any
    message: str | None = None


async def _evaluate(bodies: list[dict[str, Any]], config: RewardConfig, client: AsyncClient) -> list[Reward]:
    deadline = time.monotonic() + config.timeout_s
    try:
        # Results that `reuse` finds come back in this answer: a kernel seen before costs one request
        # (shared with the calls made at the same time).
        accepted = await _coalescer_for(client).submit(bodies)
    except KjudgeError as exc:
        return [infra_error(f"kjudge refused or could not take the submission: {exc}")] * len(bodies)
    ids = [s.id for s in accepted.submissions]
    finals: dict[str, _Final | BaseException | None] = {
        s.id: _Final(s.status, s.result)
        for s in accepted.submissions
        if s.status in FINAL and s.result is not None
    }
    waiting = [(s.id, s.status) for s in accepted.submissions if s.id not in finals]
    if waiting:
        finals.update(await _wait(client, accepted.id, waiting, deadline))
    rewards = []
    for sid in ids:
        final = finals.get(sid)
        if isinstance(final, BaseException):
            rewards.append(infra_error(f"waiting for submission {sid} failed: {final}", sid))
        elif final is None or final.status not in FINAL:
            rewards.append(
                infra_error(f"submission {sid} was not evaluated within {config.timeout_s:g} s", sid)
            )
        else:
            result = final.result if final.status == "done" else None
            rewards.append(
                shape(result, config, status=final.status, submission_id=sid, message=final.message)
            )
    return rewards


def _final(sub: SubmissionOut) -> _Final:
    return _Final(sub.status, sub.result, sub.message)


async def _wait(
    client: AsyncClient, batch_id: str, waiting: list[tuple[str, str]], deadline: float
) -> dict[str, _Final | BaseException | None]:
    """Final states of the (id, status) pairs: a long-poll each for a few, else the batch's
    summary until it is done and then its results in one request."""
    if len(waiting) <= PER_ID_WAIT_MAX or not batch_id:

        async def one(sid: str, status: str) -> _Final:
            if status in FINAL:
                return _final(await client.get(sid))
            return _final(await client.wait(sid, timeout=max(0.0, deadline - time.monotonic())))

        got = await asyncio.gather(*(one(sid, st) for sid, st in waiting), return_exceptions=True)
        return {sid: g for (sid, _), g in zip(waiting, got, strict=True)}
    ids = {sid for sid, _ in waiting}
    delay = BATCH_POLL_START_S
    try:
        # Done when these are: the batch may hold other calls' submissions too (_Coalescer).
        while not all(s.status in FINAL for s in (await client.batch(batch_id)).submissions if s.id in ids):
            if time.monotonic() + delay > deadline:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, BATCH_POLL_MAX_S)
        batch = await client.batch(batch_id, include_result=True)
    except KjudgeError as exc:
        return dict.fromkeys(ids, exc)
    return {s.id: _final(s) for s in batch.submissions if s.id in ids}
