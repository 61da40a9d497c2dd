"""Evaluation latency on KernelBench level-1 problem 19 (ReLU, batch_size=4096, dim=393216, fp32).

Runs `evaluator.api.evaluate` twice with the CUDA ReLU example (examples/relu/relu_cuda.cu):
cold (empty cache: the kernel is compiled and both baselines are measured) and warm (everything
cached), with KernelBench's settings — 5 correctness trials, 100 timing trials — and prints where
the time goes (process start, input generation, compile, correctness, timing, baselines).
Reference point (issue 2): KernelBench's harness took 82.6 s built / 139.8 s with compile on an
H100. Target: <= 5 s built, <= 30 s with the compile.

Usage on a GPU machine: python bench/eval_latency.py [--out bench/results/eval_latency.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.provenance import commit  # noqa: E402
from evaluator.api import evaluate  # noqa: E402
from evaluator.options import EvalOptions, Submission, TimingOptions  # noqa: E402
from evaluator.problem import Problem  # noqa: E402
from evaluator.result import Result  # noqa: E402

# KernelBench level1/19_ReLU.py, verbatim apart from comments.
PROBLEM_19 = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Simple model that performs a ReLU activation.
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
'''

PHASES = [
    ("probe", "target probe"),
    ("compile", "compile (native build)"),
    ("process_start", "child process start"),
    ("import", "child imports (torch)"),
    ("setup", "setup (device, problem, reference)"),
    ("inputs", "input generation"),
    ("baselines", "baselines (eager + torch.compile)"),
    ("load", "load candidate"),
    ("correctness", "correctness (5 trials)"),
    ("timing", "timing (100 trials)"),
    ("run", "child wall time"),
    ("total", "total"),
]


def table(runs: dict[str, Result]) -> str:
    names = list(runs)
    lines = [f"{'phase':<36}" + "".join(f"{n:>12}" for n in names)]
    for key, label in PHASES:
        cells = [runs[n].durations_s.get(key) for n in names]
        lines.append(
            f"{label:<36}" + "".join(f"{c:>11.2f}s" if c is not None else f"{'-':>12}" for c in cells)
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "eval_latency.json")
    parser.add_argument("--kernel", type=Path, default=ROOT / "examples" / "relu" / "relu_cuda.cu")
    args = parser.parse_args()

    problem = Problem.from_source(PROBLEM_19, name="19_ReLU")
    submission = Submission.from_file(args.kernel)
    runs: dict[str, Result] = {}
    with tempfile.TemporaryDirectory(prefix="kjudge-bench-") as tmp:
        options = EvalOptions(
            device="cuda",
            trials=5,
            seed=42,
            # KernelBench's protocol: 100 timed trials.
            timing=TimingOptions(min_reps=100, max_reps=100, max_time_s=60),
            cache_dir=Path(tmp) / "cache",
        )
        for name in ("cold", "warm"):
            start = time.monotonic()
            result = evaluate(problem, submission, options)
            wall = time.monotonic() - start
            runs[name] = result
            print(f"{name}: verdict={result.verdict} wall={wall:.2f}s message={result.message}", flush=True)
            if result.verdict != "correct":
                print(result.logs.compile[-3000:], result.logs.run[-3000:], sep="\n")

    warm = runs["warm"]
    device = warm.target.device if warm.target else "unknown"
    print(f"\nKernelBench level 1 #19 ReLU, 4096 x 393216 fp32, on {device}; wall-clock seconds per phase")
    print(table(runs))
    if warm.timing and warm.baseline:
        print(
            f"\ncandidate median {warm.timing.median_ms:.3f} ms (n={warm.timing.n}, L2 flushed); "
            f"eager {warm.baseline.eager_ms} ms; torch.compile {warm.baseline.compile_ms} ms"
        )
    report = {
        "benchmark": "eval_latency",
        "problem": "KernelBench level1/19_ReLU (batch_size=4096, dim=393216, float32)",
        "kernel": str(args.kernel.relative_to(ROOT) if args.kernel.is_relative_to(ROOT) else args.kernel),
        "settings": {"correctness_trials": 5, "timing_trials": 100},
        "device": device,
        "target": warm.target.model_dump(mode="json") if warm.target else None,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "kernelbench_reference_s": {"built": 82.6, "with_compile": 139.8, "device": "H100"},
        "targets_s": {"built": 5.0, "with_compile": 30.0},
        "runs": {
            name: {
                "verdict": r.verdict,
                "total_s": r.durations_s.get("total"),
                "durations_s": r.durations_s,
                "timing": r.timing.model_dump() if r.timing else None,
                "baseline": r.baseline.model_dump() if r.baseline else None,
            }
            for name, r in runs.items()
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\nwrote {args.out}")
    return 0 if all(r.verdict == "correct" for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
