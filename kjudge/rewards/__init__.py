"""kjudge as an RL reward: one adaptor per framework, one shaping (evaluator/reward.py).

- verl: `kjudge.rewards.verl.compute_score` / `compute_score_batch` (docs in that module)
- TRL: `kjudge.rewards.trl.kernel_reward` (async, for GRPOTrainer)
- OpenRLHF: the server's `POST /v1/rewards/openrlhf` (`--remote_rm_url`), api/routes/rewards.py

All of them talk to the server at $KJUDGE_URL with $KJUDGE_API_KEY; README "Use kjudge as an RL
reward" shows each in one line.
"""

from evaluator.extract import Extracted, extract_code
from evaluator.reward import Outcome, Reward, RewardConfig, shape
from kjudge.rewards.core import Item, load_config, score_items, stats

__all__ = [
    "Extracted",
    "Item",
    "Outcome",
    "Reward",
    "RewardConfig",
    "extract_code",
    "load_config",
    "score_items",
    "shape",
    "stats",
]
