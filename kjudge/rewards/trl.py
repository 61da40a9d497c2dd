"""TRL: `kernel_reward`, an async reward function for `GRPOTrainer`.

    from kjudge.rewards.trl import kernel_reward
    trainer = GRPOTrainer(model=..., reward_funcs=[kernel_reward], train_dataset=dataset)

GRPOTrainer awaits async reward functions on its own event loop with
`prompts=, completions=, completion_ids=`, every dataset column as a keyword (one value per
completion) and `trainer_state=`. The dataset names the problem in a `problem_id` column (an id
or a name); optional `language` and `target` columns choose them per row. Completions may be
strings or chat messages (`[{"role": "assistant", "content": ...}]`).

Returns one float per completion, or `None` where kjudge itself failed (TRL ignores `None`,
so a broken evaluation never becomes a low reward). Shaping: evaluator/reward.py;
`make_kernel_reward(...)` takes RewardConfig fields and another problem column.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from evaluator.reward import RewardConfig
from kjudge.rewards.core import Item, client_for, load_config, score_items

RewardFunc = Callable[..., Awaitable[list[float | None]]]


def completion_text(completion: Any) -> str:
    """A completion as text: TRL passes a string, or for conversational data a list of messages
    whose last assistant turn holds the answer."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content") or "")
    if isinstance(completion, Sequence):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                content = message.get("content")
                if isinstance(content, list):  # multimodal content parts
                    return "".join(p.get("text", "") for p in content if isinstance(p, dict))
                return str(content or "")
    return str(completion)


def _column(kwargs: dict[str, Any], name: str, n: int) -> list[Any]:
    value = kwargs.get(name)
    if value is None:
        return [None] * n
    if isinstance(value, str):  # one value for the whole call
        return [value] * n
    return list(value)


def make_kernel_reward(
    problem_column: str = "problem_id",
    *,
    config: RewardConfig | None = None,
    url: str | None = None,
    api_key: str | None = None,
    **config_overrides: Any,
) -> RewardFunc:
    """A `kernel_reward` reading the problem from `problem_column`, shaped by `config`."""

    async def kernel_reward(
        prompts: list[Any] | None = None, completions: list[Any] | None = None, **kwargs: Any
    ) -> list[float | None]:
        completions = completions or []
        n = len(completions)
        problems = _column(kwargs, problem_column, n)
        if problem_column == "problem_id" and all(p is None for p in problems):
            problems = _column(kwargs, "problem", n)
        if any(p is None for p in problems):
            raise ValueError(
                f"kernel_reward needs the problem of every completion: add a {problem_column!r} column "
                "(a kjudge problem id or name) to the dataset"
            )
        languages, targets = _column(kwargs, "language", n), _column(kwargs, "target", n)
        items = [
            Item(
                completion=completion_text(c),
                problem=str(p),
                language=lang,
                target=t,
                metadata={"client": "kjudge.rewards.trl"},
            )
            for c, p, lang, t in zip(completions, problems, languages, targets, strict=True)
        ]
        settings = load_config(config, **config_overrides)
        rewards = await score_items(items, settings, client=client_for(url, api_key, settings.client_retries))
        return [r.score for r in rewards]

    kernel_reward.__name__ = "kernel_reward"  # TRL logs each reward function under its name
    return kernel_reward


kernel_reward: RewardFunc = make_kernel_reward()
