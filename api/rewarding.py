"""RL rewards served by the API: OpenRLHF's remote reward protocol (`--remote_rm_url`).

OpenRLHF POSTs `{"query": [...], "prompts": [...], "labels": [...]}` — query i is prompt i
followed by the policy's response, label i (the dataset's `--label_key` column) names the
kjudge problem (id or name) — and reads `rewards` (one float each), `scores` (used by its
dynamic filtering: here 1.0 for a correct kernel, else 0.0) and `extra_logs` (per-sample
lists it averages into its logs).

One request is one batch: the responses that hold code are stored through the same path as
`POST /v1/batches` (validation, reuse of identical earlier results, backpressure: a full queue
refuses the whole request with 429, which OpenRLHF retries), the request waits for the
evaluations (at most `Settings.reward_wait_s`) and each result is shaped by
evaluator.reward.shape with the server's `reward_config`. A response without code gets the
format score without a submission. kjudge's own failures — status `error`, no result in time —
get `infra_score`, `extra_logs.infra_error` = 1 and a log line, never a kernel's score.
A retried request (same body) replays the submissions of the first instead of evaluating again.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time

import sqlalchemy as sa
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session, sessionmaker

from api.auth import Principal
from api.backpressure import QueueGate
from api.errors import ApiError
from api.schemas import BatchItem
from api.submitting import ProblemCache, submit
from core.publish import Enqueuer
from core.settings import Settings
from db.models import FINAL_STATUSES, ResultRow, Submission
from evaluator.extract import extract_code
from evaluator.result import Language
from evaluator.reward import Outcome, Reward, RewardConfig, infra_error, no_code, shape

log = logging.getLogger("kjudge.api.rewards")

POLL_START_S, POLL_MAX_S = 0.2, 1.0


class OpenRLHFRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")  # OpenRLHF may add fields; they do not concern us

    query: list[str] = Field(description="prompt + response, one per sample")
    prompts: list[str] | None = Field(default=None, description="the prompt part of each query")
    labels: list[str] | None = Field(
        default=None, description="the kjudge problem (id or name) of each sample"
    )


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


def response_text(query: str, prompt: str | None) -> str:
    """The policy's response: the query minus its prompt (the prompt may show code too)."""
    if prompt and query.startswith(prompt):
        return query[len(prompt) :]
    return query


def reward_config(settings: Settings) -> RewardConfig:
    return RewardConfig.model_validate(settings.reward_config)


async def score_openrlhf(
    body: OpenRLHFRequest,
    *,
    maker: sessionmaker[Session],
    settings: Settings,
    enqueuer: Enqueuer,
    problem_cache: ProblemCache,
    gate: QueueGate,
    principal: Principal,
    target: str | None,
    language: str | None,
) -> OpenRLHFResponse:
    config = reward_config(settings)
    n = len(body.query)
    labels = body.labels if body.labels is not None else [None] * n
    prompts = body.prompts if body.prompts is not None else [None] * n
    if len(labels) != n or len(prompts) != n:
        raise ApiError(422, "length_mismatch", "query, prompts and labels must have one entry per sample")
    if language is not None and language not in {lang.value for lang in Language}:
        raise ApiError(404, "unknown_language", f"unknown language {language!r}")
    rewards: list[Reward | None] = [None] * n
    items: list[BatchItem] = []
    where: list[int] = []
    request_key = hashlib.sha256(body.model_dump_json().encode()).hexdigest()[:32]
    for i, (query, prompt, label) in enumerate(zip(body.query, prompts, labels, strict=True)):
        code = extract_code(response_text(query, prompt), language)
        if code is None:
            rewards[i] = no_code(config)
            continue
        if not label:
            raise ApiError(422, "missing_label", f"labels[{i}] must name the kjudge problem (--label_key)")
        items.append(
            BatchItem(
                problem_id=label,
                language=code.language.value,
                source=code.source,
                target=target or config.target,
                reuse=config.reuse,
                metadata={"client": "openrlhf"},
                # The same request sent again (OpenRLHF retries) replays instead of re-evaluating.
                client_request_id=f"openrlhf-{request_key}-{i}",
            )
        )
        where.append(i)
    if items:
        keys = [item.client_request_id for item in items]
        _, accepted = await run_in_threadpool(
            submit, maker, settings, enqueuer, problem_cache, gate, principal, items, keys, batch=True
        )
        ids = [a.id for a in accepted]
        finals = await _wait(
            maker, ids, time.monotonic() + min(config.timeout_s, settings.reward_wait_s), config
        )
        for i, sid in zip(where, ids, strict=True):
            rewards[i] = finals.get(sid) or infra_error(
                f"submission {sid} was not evaluated within {settings.reward_wait_s:g} s", sid
            )
    done = [r for r in rewards if r is not None]
    for r in done:
        if r.infra_error:
            log.warning("openrlhf reward: infrastructure error, given infra_score: %s", r.message)
    return _response(done, config)


async def _wait(
    maker: sessionmaker[Session], ids: list[str], deadline: float, config: RewardConfig
) -> dict[str, Reward]:
    """Polls the submissions' statuses until all are final or the deadline passes; then shapes
    the final ones (the others are left out: the caller makes them infra errors)."""
    delay = POLL_START_S
    while True:
        pending = await run_in_threadpool(_pending, maker, ids)
        if not pending or time.monotonic() + delay > deadline:
            break
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, POLL_MAX_S)
    return await run_in_threadpool(_shape_final, maker, ids, config)


def _pending(maker: sessionmaker[Session], ids: list[str]) -> int:
    with maker() as session:
        return int(
            session.scalar(
                sa.select(sa.func.count()).where(
                    Submission.id.in_(ids), Submission.status.not_in(FINAL_STATUSES)
                )
            )
            or 0
        )


def _shape_final(maker: sessionmaker[Session], ids: list[str], config: RewardConfig) -> dict[str, Reward]:
    out: dict[str, Reward] = {}
    with maker() as session:
        rows = session.execute(
            sa.select(Submission.id, Submission.status, Submission.message, ResultRow.result)
            .outerjoin(ResultRow, ResultRow.submission_id == Submission.id)
            .where(Submission.id.in_(ids))
        ).all()
    for sid, status, message, result in rows:
        if status not in FINAL_STATUSES:
            continue
        out[sid] = shape(result, config, status=status, submission_id=sid, message=message)
    return out


def _response(rewards: list[Reward], config: RewardConfig) -> OpenRLHFResponse:
    def share(outcome: Outcome) -> list[float]:
        return [1.0 if r.outcome is outcome else 0.0 for r in rewards]

    return OpenRLHFResponse(
        rewards=[r.score_or(config.infra_score) for r in rewards],
        scores=share(Outcome.CORRECT),
        extra_logs={
            "kjudge_infra_error": share(Outcome.INFRA_ERROR),
            "kjudge_correct": share(Outcome.CORRECT),
            "kjudge_incorrect": share(Outcome.INCORRECT),
            "kjudge_compile_error": share(Outcome.COMPILE_ERROR),
            "kjudge_rejected": share(Outcome.REJECTED),
            "kjudge_no_code": share(Outcome.NO_CODE),
            # Mean over correct kernels only would need a mask OpenRLHF does not apply: 0 elsewhere.
            "kjudge_speedup_if_correct": [
                r.speedup if r.outcome is Outcome.CORRECT and r.speedup is not None else 0.0 for r in rewards
            ],
        },
    )
