"""Evaluation latency on KernelBench level-1 problem 19 (ReLU, batch_size=4096, dim=393216, fp32).

Runs `evaluator.api.evaluate` with the CUDA ReLU example (examples/relu/relu_cuda.cu) and
KernelBench's settings (5 correctness trials, 100 timing trials) in the four situations a
worker meets, on an empty cache:
  prepare     worker start-up (evaluator.api.prepare): target probe, device ceilings, the
              precompiled torch header — once per worker, before any job
  first       the problem's first candidate: compile + the baselines child (eager, torch.compile)
  new kernel  another candidate for the same problem (an RL rollout's normal case): compile only
  built       the same candidate again: nothing to build or measure but the candidate itself
and prints where the time goes (process start, imports, input generation, correctness, timing).
Then the same two situations as a worker runs them, with spares on (evaluator.api.enable_spares,
evaluator/spares.py): the run child was started and imported torch after the previous job, while
the worker waited. "+spare" waits until the spare is ready (a worker that had a moment between
jobs); "+spare b2b" starts right after the previous job (a backlog: the spare is still importing
and finishes inside process_start). A spare's time before its job (spare_start, spare_import) is
shown but is not part of total.
Reference point (issue 2): KernelBench's harness took 82.6 s built / 139.8 s with compile on an
H100. Targets: built <= 5 s, new kernel (with its compile) <= 30 s.

Usage on a GPU machine: python bench/eval_latency.py [--out bench/results/eval_latency.json]
Smoke test anywhere: python bench/eval_latency.py --device cpu --kernel examples/relu/relu_cpp.cpp --dim 4096 --out ''
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
from evaluator.api import SPARES, enable_spares, evaluate, prepare  # noqa: E402
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
    ("spare_start", "spare: process start (before the job)"),
    ("spare_import", "spare: imports (before the job)"),
    ("probe", "target probe + ceilings"),
    ("compile", "compile (native build)"),
    ("baselines_child", "baselines child (eager + compile)"),
    ("process_start", "child process start"),
    ("import", "child imports (torch)"),
    ("setup", "setup (device, problem, reference)"),
    ("inputs", "input generation"),
    ("guard", "integrity snapshot"),
    ("load", "load candidate"),
    ("correctness", "correctness (5 trials)"),
    ("integrity", "integrity checks"),
    ("timing", "timing (100 trials)"),
    ("roofline", "roofline report"),
    ("exit", "child exit + sandbox teardown"),
    ("run", "child wall time"),
    ("total", "total"),
]


def table(runs: dict[str, Result]) -> str:
    names = list(runs)
    lines = [f"{'phase':<40}" + "".join(f"{n:>18}" for n in names)]
    for key, label in PHASES:
        cells = [runs[n].durations_s.get(key) for n in names]
        if all(c is None for c in cells):
            continue
        lines.append(
            f"{label:<40}" + "".join(f"{c:>17.2f}s" if c is not None else f"{'-':>18}" for c in cells)
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "eval_latency.json"))
    parser.add_argument("--kernel", type=Path, default=ROOT / "examples" / "relu" / "relu_cuda.cu")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--dim", type=int, default=393216, help="KernelBench's 393216 unless smoke-testing")
    args = parser.parse_args()

    problem = Problem.from_source(PROBLEM_19.replace("dim = 393216", f"dim = {args.dim}"), name="19_ReLU")
    submission = Submission.from_file(args.kernel)
    comment = "#" if submission.filename and submission.filename.endswith(".py") else "//"
    # Same kernel, different bytes: a new content hash, so it is compiled again.
    variant = submission.model_copy(update={"source": submission.source + f"\n{comment} variant\n"})
    variant2 = submission.model_copy(update={"source": submission.source + f"\n{comment} variant 2\n"})
    runs: dict[str, Result] = {}
    with tempfile.TemporaryDirectory(prefix="kjudge-bench-") as tmp:
        options = EvalOptions(
            device=args.device,
            trials=5,
            seed=42,
            # KernelBench's protocol: 100 timed trials.
            timing=TimingOptions(min_reps=100, max_reps=100, max_time_s=60),
            cache_dir=Path(tmp) / "cache",
        )
        start = time.monotonic()
        prepared = prepare(args.device, options.resolved_cache_dir())
        prepare_s = time.monotonic() - start
        print(f"prepare: {prepare_s:.2f}s — " + "; ".join(prepared), flush=True)

        def run(name: str, sub: Submission, wait_for_spare: bool = False) -> Result:
            if wait_for_spare:
                start = time.monotonic()
                ready = SPARES.wait_ready(120)
                print(f"  (spare ready: {ready}, waited {time.monotonic() - start:.2f}s)", flush=True)
            start = time.monotonic()
            result = evaluate(problem, sub, options)
            wall = time.monotonic() - start
            print(f"{name}: verdict={result.verdict} wall={wall:.2f}s message={result.message}", flush=True)
            if result.verdict != "correct":
                print(result.logs.compile[-3000:], result.logs.run[-3000:], sep="\n")
            return result

        for name, sub in (("first", submission), ("new kernel", variant), ("built", variant)):
            runs[name] = run(name, sub)
        # As a worker: spares on from here; the previous job (not shown) starts the first spare.
        enable_spares(True)
        try:
            run("previous job (starts a spare)", variant)
            runs["new kernel+spare"] = run("new kernel+spare", variant2, wait_for_spare=True)
            runs["built+spare"] = run("built+spare", variant2, wait_for_spare=True)
            runs["built+spare b2b"] = run("built+spare b2b", variant2)
        finally:
            enable_spares(False)

    built = runs["built"]
    device = built.target.device if built.target else "unknown"
    print(
        f"\nKernelBench level 1 #19 ReLU, 4096 x {args.dim} fp32, on {device}; wall-clock seconds per phase"
        f" (worker start-up before these: {prepare_s:.2f} s)"
    )
    print(table(runs))
    if built.timing and built.baseline:
        print(
            f"\ncandidate median {built.timing.median_ms:.3f} ms (n={built.timing.n}, L2 flushed: {built.timing.l2_flushed}); "
            f"eager {built.baseline.eager_ms} ms; torch.compile {built.baseline.compile_ms} ms"
        )
    report = {
        "benchmark": "eval_latency",
        "problem": f"KernelBench level1/19_ReLU (batch_size=4096, dim={args.dim}, float32)",
        "kernel": str(args.kernel.relative_to(ROOT) if args.kernel.is_relative_to(ROOT) else args.kernel),
        "settings": {"correctness_trials": 5, "timing_trials": 100},
        "statistic": "wall-clock seconds of one evaluate() call per situation, single run each",
        "spares": "'+spare' runs: a spare run child served the job (spare_* keys: spent before the job, "
        "not in total); '+spare' waited for the spare to be ready, '+spare b2b' did not",
        "device": device,
        "target": built.target.model_dump(mode="json") if built.target else None,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "kernelbench_reference_s": {"built": 82.6, "with_compile": 139.8, "device": "H100"},
        "targets_s": {"built": 5.0, "new_kernel": 30.0},
        "prepare_s": round(prepare_s, 3),
        "prepare": prepared,
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
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"\nwrote {out}")
    return 0 if all(r.verdict == "correct" for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
