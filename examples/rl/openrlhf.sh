#!/usr/bin/env bash
# OpenRLHF with kjudge as the remote reward: --reward.remote_url (before OpenRLHF 0.10's dotted
# CLI: --remote_rm_url) pointed at kjudge's POST /v1/rewards/openrlhf. The prompt dataset has an
# `input` column (the task) and a `problem` column naming the kjudge problem, which OpenRLHF
# passes to the reward as `labels` (--data.label_key). OpenRLHF sends no headers, so the API key
# goes in the URL, with the target (and optionally language=cuda|hip|cpp|kernelbench|triton).
set -euo pipefail
KJUDGE_URL=${KJUDGE_URL:-http://127.0.0.1:8000}
REWARD_URL="${KJUDGE_URL}/v1/rewards/openrlhf?target=${KJUDGE_TARGET:-sm_90}${KJUDGE_API_KEY:+&api_key=${KJUDGE_API_KEY}}"

ray job submit --address="http://127.0.0.1:8265" -- python3 -m openrlhf.cli.train_ppo_ray \
   --actor.model_name_or_path Qwen/Qwen2.5-7B-Instruct \
   --reward.remote_url "${REWARD_URL}" \
   --data.prompt_dataset your-org/kernel-prompts \
   --data.input_key input \
   --data.label_key problem \
   --data.apply_chat_template \
   --algo.advantage.estimator group_norm \
   --rollout.n_samples_per_prompt 8 \
   --rollout.batch_size 64 \
   --rollout.max_new_tokens 4096 \
   --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
   --vllm.num_engines 4 --vllm.tensor_parallel_size 2 \
   --ckpt.output_dir ./ckpt/kjudge-grpo
