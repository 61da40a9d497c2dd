"""Each adaptor against a real `kjudge serve` on the CPU target, called with exactly the argument
shapes its framework passes: TRL's keyword arguments (strings and chat messages), verl's
positional per-sample and keyword batched forms (numpy object arrays, as verl's DataProto holds
them), OpenRLHF's JSON. A correct kernel scores above a wrong one, a wrong one above a compile
error, a hack gets the hack penalty, no code the format score, and a stopped server gives None /
infra_error — never a low reward."""

from __future__ import annotations

import asyncio
import math

import httpx
import numpy as np
import pytest

from evaluator.reward import RewardConfig
from kjudge import Client
from kjudge.rewards import stats
from kjudge.rewards.trl import kernel_reward, make_kernel_reward
from kjudge.rewards.verl import compute_score, compute_score_async, compute_score_batch

from .conftest import COMPILE_ERROR, CORRECT, HACK, INCORRECT, NO_CODE, dead_url, fenced

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DEFAULT = RewardConfig()
KERNELS = {"correct": CORRECT, "incorrect": INCORRECT, "compile_error": COMPILE_ERROR, "hack": HACK}


def _assert_ordering(scores: dict[str, float | None]) -> None:
    assert scores["correct"] is not None and scores["incorrect"] is not None
    assert scores["correct"] > scores["incorrect"] > scores["compile_error"], scores
    assert scores["hack"] == DEFAULT.hack_score, scores
    assert scores["no_code"] == DEFAULT.format_score, scores


def test_trl_kernel_reward_with_grpo_trainer_kwargs(kjudge_env) -> None:
    names = ["correct", "incorrect", "compile_error", "hack", "no_code"]
    completions: list = [fenced(KERNELS[n]) for n in names[:4]] + [NO_CODE]
    # Conversational datasets give message lists: the last assistant turn is the answer.
    completions[1] = [{"role": "assistant", "content": completions[1]}]
    prompts = [[{"role": "user", "content": "Write a faster ReLU for kjudge."}]] * len(names)
    rewards = asyncio.run(
        kernel_reward(
            prompts=prompts,
            completions=completions,
            completion_ids=[[1, 2, 3]] * len(names),
            problem_id=[kjudge_env.problem] * len(names),  # the dataset column naming the problem
            target=["cpu"] * len(names),
            level=[1] * len(names),  # other columns pass through untouched
            trainer_state=object(),
        )
    )
    assert len(rewards) == len(names)
    _assert_ordering(dict(zip(names, rewards, strict=True)))


def test_results_carry_feedback_for_each_verdict(kjudge_env) -> None:
    asyncio.run(
        kernel_reward(
            prompts=["p"] * 4,
            completions=[fenced(k) for k in KERNELS.values()],
            problem_id=[kjudge_env.problem] * 4,
            target=["cpu"] * 4,
        )
    )
    with Client(kjudge_env.url) as kj:
        by_verdict = {
            s.verdict: s.result for s in kj.results(problem_id=kjudge_env.problem_id, include_result=True)
        }
    compile_fb = by_verdict["compile_error"].feedback
    assert "line 5:" in compile_fb and "return y;" in compile_fb, compile_fb  # the candidate's own line
    incorrect_fb = by_verdict["incorrect"].feedback
    assert "first mismatch at output[" in incorrect_fb and "expected 0.0" in incorrect_fb, incorrect_fb
    assert "atol=0.01" in incorrect_fb, incorrect_fb
    hack_fb = by_verdict["rejected"].feedback
    assert "Flag reference_op_called:" in hack_fb and "reference's own PyTorch operator" in hack_fb, hack_fb
    correct_fb = by_verdict["correct"].feedback
    assert "speedup vs eager" in correct_fb, correct_fb
    for text in (compile_fb, incorrect_fb, hack_fb, correct_fb):
        assert "/tmp/" not in text and str(kjudge_env.log.parent) not in text and len(text) <= 2000


def test_verl_compute_score_positional_sync_and_async(kjudge_env) -> None:
    extra = {"target": "cpu", "index": 0, "split": "train"}
    correct = compute_score("kjudge/relu", fenced(CORRECT), kjudge_env.problem, extra)
    wrong = asyncio.run(compute_score_async("kjudge/relu", fenced(INCORRECT), kjudge_env.problem, extra))
    none = compute_score("kjudge/relu", NO_CODE, kjudge_env.problem, extra)
    assert set(correct) == set(wrong) == set(none)  # verl gathers the extra keys per key
    assert correct["infra_error"] is False and correct["verdict"] == "correct"
    assert correct["score"] > wrong["score"]
    assert math.isfinite(correct["speedup"]) and math.isnan(wrong["speedup"])
    assert none["score"] == DEFAULT.format_score and none["outcome"] == "no_code"


def test_verl_batch_reward_manager_form(kjudge_env) -> None:
    names = ["correct", "incorrect", "compile_error", "hack", "no_code"]
    n = len(names)
    # verl's batch reward manager passes its non_tensor_batch columns: numpy object arrays.
    out = compute_score_batch(
        data_sources=np.array(["kjudge/relu"] * n, dtype=object),
        solution_strs=[fenced(KERNELS[x]) for x in names[:4]] + [NO_CODE],
        ground_truths=np.array(
            [{"problem_id": kjudge_env.problem}] * 2 + [kjudge_env.problem] * 3, dtype=object
        ),
        extra_infos=np.array([{"target": "cpu"}] * n, dtype=object),
        infra_score=-0.5,  # custom_reward_function.reward_kwargs
    )
    assert [o["infra_error"] for o in out] == [False] * n
    _assert_ordering({name: o["score"] for name, o in zip(names, out, strict=True)})


def test_openrlhf_remote_reward_protocol(kjudge_env) -> None:
    names = ["correct", "incorrect", "compile_error", "hack", "no_code"]
    # The prompt shows the reference in a code block: only the response may be scored.
    prompt = "Rewrite this faster:\n```python\nclass Model(nn.Module):\n    pass\n```\n"
    responses = [fenced(KERNELS[n]) for n in names[:4]] + [NO_CODE]
    body = {
        "query": [prompt + r for r in responses],
        "prompts": [prompt] * len(names),
        "labels": [kjudge_env.problem] * len(names),
    }
    reply = httpx.post(
        f"{kjudge_env.url}/v1/rewards/openrlhf", params={"target": "cpu"}, json=body, timeout=600
    )
    assert reply.status_code == 200, reply.text
    got = reply.json()
    _assert_ordering(dict(zip(names, got["rewards"], strict=True)))
    assert got["scores"] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert got["extra_logs"]["kjudge_infra_error"] == [0.0] * len(names)
    assert got["extra_logs"]["kjudge_no_code"] == [0.0, 0.0, 0.0, 0.0, 1.0]


def test_a_stopped_server_is_an_infra_error_not_a_low_reward(monkeypatch) -> None:
    url = dead_url()
    before = stats().get("infra_error", 0)
    reward = make_kernel_reward(url=url, client_retries=1)
    got = asyncio.run(
        reward(prompts=["p", "p"], completions=[fenced(CORRECT), NO_CODE], problem_id=["relu_rl"] * 2)
    )
    assert got == [None, DEFAULT.format_score]  # no code needs no server: still a format failure

    monkeypatch.setenv("KJUDGE_URL", url)
    out = compute_score(
        "kjudge/relu", fenced(INCORRECT), "relu_rl", None, infra_score=0.125, client_retries=1
    )
    assert out["infra_error"] is True and out["score"] == 0.125 and out["outcome"] == "infra_error"
    (batched,) = compute_score_batch(
        data_sources=["kjudge/relu"], solution_strs=[fenced(HACK)], ground_truths=["relu_rl"], extra_infos=[None],
        client_retries=0,
    )  # fmt: skip
    assert batched["infra_error"] is True and batched["score"] == DEFAULT.infra_score
    assert stats()["infra_error"] == before + 3
