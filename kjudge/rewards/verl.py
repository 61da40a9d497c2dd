"""verl: custom reward functions scored by a kjudge server.

In the trainer's config (examples/rl/verl_kjudge.yaml):

    custom_reward_function:
      path: <site-packages>/kjudge/rewards/verl.py   # python -c "import kjudge.rewards.verl as m; print(m.__file__)"
      name: compute_score            # per sample (naive / prime reward managers)
      # name: compute_score_batch    # with reward_model.reward_manager=batch
      reward_kwargs: {infra_score: 0.0}   # RewardConfig fields (evaluator/reward.py)

- `compute_score(data_source, solution_str, ground_truth, extra_info=None, **reward_kwargs)`:
  the per-sample form (synchronous; `compute_score_async` is the same as a coroutine for verl's
  async reward loop).
- `compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, **reward_kwargs)`:
  the form verl's `batch` reward manager calls, all samples in one kjudge batch.

`ground_truth` is the kjudge problem id or name (or a dict holding `problem_id`); `extra_info`
may carry `target` and `language`. Each returns verl's dict form: `score` (a float) plus the same
extra keys for every sample — verl collects them per key into `reward_extra_info`:
`infra_error` (True when kjudge, not the kernel, failed: `score` is then `infra_score`),
`outcome`, `verdict`, `speedup` (NaN when not measured) and `feedback` (text for the next turn).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from evaluator.reward import Reward
from kjudge.rewards.core import Item, load_config, run_sync, score_items


def _problem(ground_truth: Any) -> str:
    if isinstance(ground_truth, dict):
        for key in ("problem_id", "problem", "name"):
            if ground_truth.get(key):
                return str(ground_truth[key])
        raise ValueError(f"ground_truth {ground_truth!r} names no kjudge problem (expected a problem_id key)")
    if ground_truth is None or not str(ground_truth).strip():
        raise ValueError("ground_truth must be the kjudge problem id or name")
    return str(ground_truth)


def _item(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any) -> Item:
    extra = extra_info if isinstance(extra_info, dict) else {}
    return Item(
        completion=solution_str,
        problem=_problem(ground_truth),
        language=extra.get("language"),
        target=extra.get("target"),
        metadata={"client": "kjudge.rewards.verl", "data_source": str(data_source)},
    )


def as_verl(reward: Reward, infra_score: float) -> dict[str, Any]:
    """verl's dict form; the same keys and types for every sample."""
    return {
        "score": float(reward.score_or(infra_score)),
        "infra_error": reward.infra_error,
        "outcome": reward.outcome.value,
        "verdict": reward.verdict or "",
        "speedup": float(reward.speedup) if reward.speedup is not None else math.nan,
        "feedback": reward.feedback or (reward.message or ""),
    }


async def compute_score_async(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **reward_kwargs: Any
) -> dict[str, Any]:
    config = load_config(**reward_kwargs)
    (reward,) = await score_items([_item(data_source, solution_str, ground_truth, extra_info)], config)
    return as_verl(reward, config.infra_score)


def compute_score(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **reward_kwargs: Any
) -> dict[str, Any]:
    return run_sync(compute_score_async(data_source, solution_str, ground_truth, extra_info, **reward_kwargs))


async def compute_score_batch_async(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **reward_kwargs: Any,
) -> list[dict[str, Any]]:
    config = load_config(**reward_kwargs)
    n = len(solution_strs)
    extras = list(extra_infos) if extra_infos is not None else [None] * n
    items = [
        _item(d, s, g, e)
        for d, s, g, e in zip(
            list(data_sources), list(solution_strs), list(ground_truths), extras, strict=True
        )
    ]
    return [as_verl(r, config.infra_score) for r in await score_items(items, config)]


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    **reward_kwargs: Any,
) -> list[dict[str, Any]]:
    return run_sync(
        compute_score_batch_async(data_sources, solution_strs, ground_truths, extra_infos, **reward_kwargs)
    )
