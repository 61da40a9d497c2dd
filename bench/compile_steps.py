"""Where a compile stage's time goes, per language and kind, on this host's target.

    python bench/compile_steps.py [--problem relu] [--languages cuda,hip,kernelbench] [--out FILE]

Builds new candidates of bench/throughput_stream.py (a variant constant no cache has seen: each
run draws a fresh base) with `evaluator.api.prebuild`, the call the compile pool makes, one at a
time after a worker's preparation (evaluator.api.prepare: the shared header, the lite runtimes),
and prints the stage's wall time, its steps (`compile_child`, `compile_lite_units`,
`compile_units`, ...) and the head of its log: which path each build took (lite torch API,
PyTorch's headers, a retry) and why. Run it where the throughput probes are slow to see which
step is.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.provenance import commit  # noqa: E402

KINDS = ("correct", "compile_error")


def measure(problem: str, languages: list[str], target_name: str) -> list[dict[str, Any]]:
    from bench.throughput_stream import _gpu_candidate
    from evaluator.api import prebuild
    from evaluator.options import EvalOptions, Submission
    from evaluator.problem import Problem
    from evaluator.result import Language
    from problems.catalog import get_builtin

    spec = get_builtin(problem)
    prob = Problem.from_source(spec.source, name=problem)
    options = EvalOptions(device=target_name)
    # The header and the lite runtimes first, as a worker's start-up builds them: no row pays them.
    started = time.monotonic()
    from evaluator.api import prepare

    prepare(target_name, options.resolved_cache_dir())
    print(f"worker preparation {time.monotonic() - started:.1f} s")
    base = int(time.time()) % 1_000_000 * 10
    rows = []
    for i, (language, kind) in enumerate((lang, kind) for lang in languages for kind in KINDS):
        candidate = _gpu_candidate(problem, language, kind, base + i)
        submission = Submission(source=candidate.source, language=Language(language))
        started = time.monotonic()
        outcome = prebuild(prob, submission, options)
        wall = time.monotonic() - started
        verdict = outcome.result.verdict.value if outcome.result is not None else None
        log = outcome.log or (outcome.result.logs.compile if outcome.result is not None else "") or ""
        rows.append(
            {
                "language": language,
                "kind": kind,
                "wall_s": round(wall, 2),
                "built": outcome.built,
                "verdict": verdict,
                "durations_s": outcome.durations_s
                or (outcome.result.durations_s if outcome.result is not None else {}),
                "log_head": log[:1500],
            }
        )
        print(f"{language:12s} {kind:14s} {wall:6.2f} s  built={outcome.built} verdict={verdict}")
        print(f"    {json.dumps(rows[-1]['durations_s'])}")
        print("    " + log[:600].replace("\n", "\n    "))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--problem", default="relu")
    p.add_argument("--languages", default="cuda,hip,kernelbench")
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    import torch

    started = time.monotonic()
    rows = measure(args.problem, args.languages.split(","), args.device)
    report = {
        "bench": "compile_steps",
        "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "rows": rows,
        "headline": {f"{r['language']}_{r['kind']}_s": r["wall_s"] for r in rows},
        "wall_s": round(time.monotonic() - started, 1),
    }
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
