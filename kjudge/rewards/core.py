"""Scoring completions against a kjudge server: extract → submit (one batch) → wait → shape.

Shared by every framework adaptor (verl.py, trl.py). Each call submits the completions that hold
code as one batch (`POST /v1/batches`: accepted whole or refused whole; on 429 the client waits
Retry-After and sends the same batch again), waits for the results (a long-poll per submission
for a few, the batch's summary for many), and shapes each result with evaluator.reward.shape.

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
import weakref
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from api.schemas import SubmissionOut
from evaluator.extract import extract_code
from evaluator.reward import Outcome, Reward, RewardConfig, infra_error, no_code, shape
from kjudge.client import FINAL, AsyncClient, KjudgeError

log = logging.getLogger("kjudge.rewards")

CONFIG_ENV = "KJUDGE_REWARD_CONFIG"  # JSON object of RewardConfig fields
PER_ID_WAIT_MAX = 8  # up to this many pending submissions are long-polled one by one
BATCH_POLL_START_S, BATCH_POLL_MAX_S = 0.25, 2.0

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
        # Results that `reuse` finds come back in this answer: a kernel seen before costs one request.
        accepted = await client.submit_many(bodies, include_result=True)
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
        while not (await client.batch(batch_id)).done:
            if time.monotonic() + delay > deadline:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, BATCH_POLL_MAX_S)
        batch = await client.batch(batch_id, include_result=True)
    except KjudgeError as exc:
        return dict.fromkeys(ids, exc)
    return {s.id: _final(s) for s in batch.submissions if s.id in ids}
