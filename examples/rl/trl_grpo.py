"""GRPO on kernels with TRL, rewarded by a kjudge server.

    kjudge serve &                      # or a deployment: export KJUDGE_URL=... KJUDGE_API_KEY=...
    python examples/rl/trl_grpo.py --model Qwen/Qwen2.5-0.5B-Instruct --target cpu

The dataset needs a `problem_id` column (a kjudge problem id or name); `target` and `language`
columns are optional. kernel_reward returns None where kjudge itself failed, which TRL skips.
"""

from __future__ import annotations

import argparse

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from kjudge import Client
from kjudge.rewards.trl import kernel_reward

PROMPT = (
    "Write a faster implementation of this PyTorch model as a C++ extension function `forward` "
    "(torch::Tensor in, torch::Tensor out). Answer with one ```cpp block.\n\n```python\n{source}\n```"
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    parser.add_argument("--target", default="cpu", help="kjudge target: cpu, cuda, rocm, sm_90, gfx942 ...")
    parser.add_argument("--level", type=int, default=1)
    args = parser.parse_args()

    with Client() as kj:  # $KJUDGE_URL, $KJUDGE_API_KEY
        problems = kj.problems(level=args.level)
        rows = [
            {
                "prompt": [{"role": "user", "content": PROMPT.format(source=kj.problem(p.id).source)}],
                "problem_id": p.id,
                "target": args.target,
            }
            for p in problems
        ]
    trainer = GRPOTrainer(
        model=args.model,
        reward_funcs=[kernel_reward],
        train_dataset=Dataset.from_list(rows),
        args=GRPOConfig(
            output_dir="grpo-kjudge", num_generations=8, max_completion_length=2048, logging_steps=1
        ),
    )
    trainer.train()


if __name__ == "__main__":
    main()
