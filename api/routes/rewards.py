"""POST /v1/rewards/openrlhf: OpenRLHF's `--remote_rm_url` protocol (logic: api/rewarding.py).

OpenRLHF sends no headers of its own, so the API key may come as `?api_key=` in the URL it is
given; `?target=` and `?language=` choose where and how the responses are evaluated.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from sqlalchemy.orm import Session, sessionmaker

from api.auth import Principal
from api.deps import EnqueuerDep, ProblemCacheDep, QueueGateDep, SettingsDep, get_principal, get_sessionmaker
from api.errors import ApiError
from api.rewarding import OpenRLHFRequest, OpenRLHFResponse, score_openrlhf
from api.routes.submissions import ERRORS

router = APIRouter(prefix="/v1/rewards", tags=["rewards"])


async def reward_caller(
    request: Request,
    response: Response,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
    api_key: Annotated[
        str | None, Query(description="the API key, for callers that cannot set headers")
    ] = None,
) -> Principal:
    if api_key and not (authorization or x_api_key):
        authorization = f"Bearer {api_key}"
    principal = await get_principal(request, response, authorization, x_api_key)
    if not principal.has("submit"):
        raise ApiError(
            403, "missing_scope", "this API key lacks the 'submit' scope; ask an operator for a key with it"
        )
    return principal


@router.post("/openrlhf", response_model=OpenRLHFResponse, responses=ERRORS)
async def openrlhf_reward(
    body: OpenRLHFRequest,
    maker: Annotated[sessionmaker[Session], Depends(get_sessionmaker)],
    settings: SettingsDep,
    enqueuer: EnqueuerDep,
    problem_cache: ProblemCacheDep,
    gate: QueueGateDep,
    principal: Annotated[Principal, Depends(reward_caller)],
    target: Annotated[str | None, Query(max_length=64)] = None,
    language: Annotated[str | None, Query(max_length=32)] = None,
) -> OpenRLHFResponse:
    """Scores each response (query minus prompt) on the problem its label names; answers when
    every evaluation is done or `reward_wait_s` passed (kjudge's failures: `infra_score`)."""
    return await score_openrlhf(
        body,
        maker=maker,
        settings=settings,
        enqueuer=enqueuer,
        problem_cache=problem_cache,
        gate=gate,
        principal=principal,
        target=target,
        language=language,
    )
