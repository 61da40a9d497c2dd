"""Concurrent reward calls on one client share their POSTs (kjudge/rewards/core.py, _Coalescer),
against a fake server (httpx.MockTransport): each call still gets the answer for its own
completions, a call alone goes at once (alone), and one call's refused item does not cost the calls
that shared its POST their rewards."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from evaluator.reward import RewardConfig
from kjudge.client import AsyncClient
from kjudge.rewards.core import Item, score_items

CONFIG = RewardConfig()
# The fake server's verdict for a source, so that a call's score shows whose answer it got.
VERDICTS = {
    "wrong": ("incorrect", CONFIG.incorrect_score),
    "broken": ("compile_error", CONFIG.compile_error_score),
}


class FakeServer:
    """POST /v1/batches answering each item with a reused result; an item for the problem
    `unknown` refuses its whole batch (404), as the API does."""

    def __init__(self) -> None:
        self.posts: list[list[dict[str, Any]]] = []

    async def handle(self, request: httpx.Request) -> httpx.Response:
        assert request.method == "POST" and request.url.path == "/v1/batches", request.url
        assert request.url.params.get("include_result") == "true"
        items = json.loads(request.content)["submissions"]
        self.posts.append(items)
        await asyncio.sleep(0.01)  # a request takes time: calls made meanwhile wait for the next POST
        if any(item["problem_id"] == "unknown" for item in items):
            error = {"code": "unknown_problem", "message": "unknown problem 'unknown'"}
            return httpx.Response(404, json={"error": error})
        subs = []
        for item in items:
            verdict = next(v for word, (v, _) in VERDICTS.items() if word in item["source"])
            sid = f"sub-{item['client_request_id']}"
            result = {"id": sid, "problem_id": item["problem_id"], "verdict": verdict, "compiled": True}
            subs.append({"id": sid, "status": "done", "verdict": verdict, "result": result})
        return httpx.Response(
            202, json={"id": f"batch-{len(self.posts)}", "count": len(subs), "submissions": subs}
        )


def _completion(word: str, i: int) -> str:
    return (
        f"Attempt {i}:\n```cpp\n// {word} {i}\ntorch::Tensor forward(torch::Tensor x) {{ return x; }}\n```\n"
    )


async def _calls(
    server: FakeServer, problems: list[str], words: list[str], later: int = 0
) -> list[float | None]:
    """One single-completion call per word, concurrently; the last `later` of them start while
    the first POST is out."""
    async with AsyncClient("http://kjudge.test", transport=httpx.MockTransport(server.handle)) as client:

        async def one(i: int) -> float | None:
            if i >= len(words) - later:
                await asyncio.sleep(0.005)
            item = Item(completion=_completion(words[i], i), problem=problems[i], target="cpu")
            (reward,) = await score_items([item], CONFIG, client=client)
            return reward.score

        return await asyncio.gather(*(one(i) for i in range(len(words))))


def test_concurrent_calls_share_posts_and_each_gets_its_own_answer() -> None:
    server = FakeServer()
    words = ["wrong" if i % 3 else "broken" for i in range(24)]
    scores = asyncio.run(_calls(server, ["relu"] * len(words), words, later=10))
    assert scores == [VERDICTS[w][1] for w in words]
    # Calls started together go together; those started while a POST is out, in the next one.
    assert [len(p) for p in server.posts] == [14, 10]
    keys = [item["client_request_id"] for post in server.posts for item in post]
    assert len(keys) == len(set(keys)) == len(words)  # every item sent once, with its own key


def test_a_call_alone_goes_alone() -> None:
    server = FakeServer()
    assert asyncio.run(_calls(server, ["relu"], ["wrong"])) == [CONFIG.incorrect_score]
    assert [len(p) for p in server.posts] == [1]


def test_a_refused_shared_post_is_sent_again_one_call_per_post() -> None:
    server = FakeServer()
    words = ["wrong"] * 12
    problems = ["relu"] * 12
    problems[7] = "unknown"  # refused: an infra error for this call only
    scores = asyncio.run(_calls(server, problems, words))
    assert scores == [None if i == 7 else CONFIG.incorrect_score for i in range(12)]
    refused = [p for p in server.posts if len(p) > 1 and any(item["problem_id"] == "unknown" for item in p)]
    assert refused, "the bad item should first have shared a POST with others"
    # Sent again, each call alone keeps its items' keys: nothing could be stored twice.
    first_keys = {item["client_request_id"] for item in refused[0]}
    again = [p for p in server.posts if len(p) == 1 and p[0]["client_request_id"] in first_keys]
    assert len(again) == len(refused[0])
