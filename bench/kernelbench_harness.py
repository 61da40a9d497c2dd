"""KernelBench's own harness on kjudge's throughput stream, serially: the ratio issue 12 asks for.

    python bench/kernelbench_harness.py --kernelbench /path/to/KernelBench [--samples 2] [--budget 180]

KernelBench (github.com/ScalingIntelligence/KernelBench, fetched outside this project, never
copied into it) evaluates one candidate at a time: `eval_kernel_against_ref` compiles the
candidate's load_inline extension, checks it on 5 seeds and times 100 trials with CUDA events
(its `scripts/run_and_check.py` settings). Here each sample is a new `kernelbench` candidate of
the stream `bench/throughput.py` sends (bench/throughput_stream.py, `correct` kind), evaluated in
a fresh process as a serial harness would run it; the wall time from process start to result is
what one evaluation costs, so 3600 / mean is its evaluations per hour. bench/throughput.py calls
`measure` after its own run (the GPU otherwise idle) and reports kjudge's figure over this one.

KernelBench's package imports its LLM clients (openai, litellm, dotenv, tqdm) and requests at import; where
one is not installed it is replaced by an empty module in the child, which the evaluation never
calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
KERNELS = REPO / "problems" / "kernels"

# KernelBench's scripts/run_and_check.py defaults.
CORRECT_TRIALS = 5
PERF_TRIALS = 100
# Imported by kernelbench for generation and downloads, never used by an evaluation.
LLM_CLIENTS = ("openai", "litellm", "dotenv", "tqdm", "requests")

CHILD = r"""
import importlib, json, sys, time, types
started = float(sys.argv[1])
kb_src, ref_path, custom_path, build_dir, out_path = sys.argv[2:7]
import torch
def _unused(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    return lambda *a, **k: None
for name in %(clients)r:
    try:
        importlib.import_module(name)
    except ImportError:
        stub = types.ModuleType(name)
        stub.__getattr__ = _unused
        sys.modules[name] = stub
sys.path.insert(0, kb_src)
from kernelbench.eval import eval_kernel_against_ref
result = eval_kernel_against_ref(
    original_model_src=open(ref_path).read(),
    custom_model_src=open(custom_path).read(),
    num_correct_trials=%(correct)d,
    num_perf_trials=%(perf)d,
    measure_performance=True,
    timing_method="cuda_event",
    build_dir=build_dir,
    device=torch.device("cuda:0"),
    backend="cuda",
)
json.dump({"compiled": result.compiled, "correctness": result.correctness, "runtime_ms": result.runtime,
           "wall_s": time.time() - started}, open(out_path, "w"))
"""


def samples(count: int, seed: int) -> list[tuple[str, str, str]]:
    """(problem, reference source, candidate source) for `count` new correct kernelbench
    candidates over the stream's problems, as bench/throughput.py would send them."""
    from bench.throughput_stream import GPU_PROBLEMS, _gpu_candidate, _parameter_free
    from problems.catalog import get_builtin

    refs = {name: get_builtin(name).source for name in GPU_PROBLEMS}
    usable = [
        name for name, src in refs.items() if (KERNELS / name / "cuda.cu").is_file() and _parameter_free(src)
    ]
    out = []
    for i in range(count):
        name = usable[i % len(usable)]
        # bench/throughput.py's variant numbers are seed * 100_000 + offsets below 92_000: these
        # are new kernels for its harness too.
        candidate = _gpu_candidate(name, "kernelbench", "correct", seed * 100_000 + 95_000 + i)
        out.append((name, refs[name], candidate.source))
    return out


def measure(kernelbench: Path, count: int = 2, budget_s: float = 180, seed: int = 0) -> dict:
    """Runs `count` samples serially, within `budget_s` (a sample that would start past it is
    skipped); returns the per-sample rows and evaluations/hour."""
    src = kernelbench / "src"
    if not (src / "kernelbench" / "eval.py").is_file():
        return {"error": f"no KernelBench checkout at {kernelbench} (src/kernelbench/eval.py)"}
    rows = []
    deadline = time.monotonic() + budget_s
    for problem, ref, custom in samples(count, seed):
        left = deadline - time.monotonic()
        if left < 30:
            break
        with tempfile.TemporaryDirectory(prefix="kjudge-kb-harness-") as tmp:
            work = Path(tmp)
            (work / "ref.py").write_text(ref)
            (work / "custom.py").write_text(custom)
            code = CHILD % {"clients": LLM_CLIENTS, "correct": CORRECT_TRIALS, "perf": PERF_TRIALS}
            argv = [
                str(time.time()),
                str(src),
                str(work / "ref.py"),
                str(work / "custom.py"),
                str(work / "build"),
            ]
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", code, *argv, str(work / "out.json")],
                    capture_output=True,
                    text=True,
                    timeout=left,
                )
                row = json.loads((work / "out.json").read_text()) if proc.returncode == 0 else None
                err = None if row else (proc.stderr or proc.stdout)[-600:]
            except subprocess.TimeoutExpired:
                row, err = None, f"past the budget ({budget_s:.0f} s)"
        rows.append({"problem": problem, **(row or {"error": err})})
    walls = [r["wall_s"] for r in rows if "wall_s" in r]
    mean = statistics.fmean(walls) if walls else None
    return {
        "settings": {
            "num_correct_trials": CORRECT_TRIALS,
            "num_perf_trials": PERF_TRIALS,
            "timing": "cuda_event",
        },
        "samples": rows,
        "mean_s": round(mean, 2) if mean else None,
        "evaluations_per_hour": round(3600 / mean, 1) if mean else None,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--kernelbench", type=Path, required=True, help="a KernelBench checkout (its src/ is used)"
    )
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--budget", type=float, default=180, help="seconds for all samples")
    args = p.parse_args(argv)
    out = measure(args.kernelbench, args.samples, args.budget)
    print(json.dumps(out, indent=1))
    return 0 if out.get("evaluations_per_hour") else 1


if __name__ == "__main__":
    sys.exit(main())
