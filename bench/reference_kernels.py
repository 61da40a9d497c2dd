"""kjudge's regression suite: every reference kernel under problems/kernels, judged on this GPU.

    python bench/reference_kernels.py [--out FILE] [--only NAME ...] [--languages hip cuda triton]

Each kernel goes through `evaluator.api.evaluate` exactly like a submission (sandbox, correctness
trials, L2-flushed event timing, eager baseline on the same device). Every one must come back
`correct`; the script exits 1 otherwise. Writes bench/results/reference_kernels.json (rewritten
after each kernel, so a time limit still leaves the finished rows) and prints the table:
problem, language, verdict, median ms, eager ms, speedup, device — plus achieved bandwidth and
the fraction of the roofline bound, from the device ceilings measured once at start.

Native kernels are compiled up front in parallel (the content-hash cache then serves
`evaluate`), which keeps a full run within a few minutes on a 16-core GPU host.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.provenance import commit  # noqa: E402
from evaluator.api import evaluate  # noqa: E402
from evaluator.options import EvalOptions, Submission  # noqa: E402
from evaluator.problem import Problem  # noqa: E402
from evaluator.result import Language, Result  # noqa: E402
from problems.catalog import iter_builtin_problems  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "results" / "reference_kernels.json"
LANGUAGES = {"hip": Language.HIP, "cuda": Language.CUDA, "triton": Language.TRITON}


def _jobs(only: list[str] | None, languages: list[str]) -> list[tuple[Any, str, Path]]:
    jobs = []
    for problem in iter_builtin_problems():
        if only and problem.name not in only:
            continue
        for lang, path in sorted(problem.kernels.items()):
            if lang in languages:
                jobs.append((problem, lang, path))
    return jobs


def _prebuild(jobs: list[tuple[Any, str, Path]], options: EvalOptions, workers: int) -> None:
    """Compiles the native kernels concurrently into the cache `evaluate` reads. Best effort:
    any failure here is reported again, properly, by `evaluate` itself."""
    try:
        import tempfile

        from evaluator.api import child_env, probe_target
        from evaluator.build import build_native

        cache_dir = options.resolved_cache_dir()
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="kjudge-prebuild-") as tmp:
            target = probe_target(options.device, child_env(Path(tmp), cache_dir, None), cache_dir)
        native = [(p, lang, path) for p, lang, path in jobs if lang in ("hip", "cuda")]

        def build(job: tuple[Any, str, Path]) -> str:
            _, lang, path = job
            out = build_native(path.read_text(), LANGUAGES[lang], "forward", target, cache_dir / "native")
            return f"{job[0].name}/{lang}: {'ok' if out.ok else 'FAILED'} ({out.seconds:.0f} s{', cached' if out.cached else ''})"

        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for line in pool.map(build, native):
                print(f"  build {line}", flush=True)
        print(f"prebuilt {len(native)} native kernels in {time.monotonic() - started:.0f} s", flush=True)
    except Exception as exc:  # noqa: BLE001 - an optimisation only
        print(f"prebuild skipped ({type(exc).__name__}: {exc})", flush=True)


def _ceilings(device: str) -> Any:
    try:
        from evaluator.roofline import measure_ceilings

        return measure_ceilings(device)
    except Exception as exc:  # noqa: BLE001 - the table is still useful without the roofline columns
        print(f"device ceilings not measured ({type(exc).__name__}: {exc})", flush=True)
        return None


def _row(problem: Any, lang: str, result: Result, ceilings: Any) -> dict[str, Any]:
    timing = result.timing
    baseline = result.baseline
    row: dict[str, Any] = {
        "problem": problem.name,
        "level": problem.level,
        "language": lang,
        "verdict": result.verdict.value if result.verdict else None,
        "status": result.status.value,
        "median_ms": timing.median_ms if timing else None,
        "eager_ms": baseline.eager_ms if baseline else None,
        "speedup": result.speedup.vs_eager if result.speedup else None,
        "device": result.target.device if result.target else None,
        "max_abs_err": result.correctness.max_abs_err if result.correctness else None,
        "flags": result.flags,
        "message": result.message,
    }
    roof = problem.roofline
    if ceilings is not None and timing and roof:
        from evaluator.roofline import roofline_report

        report = roofline_report(timing.median_ms, roof["bytes"], roof["flops"], ceilings, roof["dtype"])
        row["achieved_gbps"] = round(report.achieved_gbps, 1)
        row["fraction_of_bound"] = round(report.fraction_of_bound, 3)
    return row


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        "problem",
        "language",
        "verdict",
        "median ms",
        "eager ms",
        "speedup",
        "GB/s",
        "of bound",
        "device",
    )
    lines = [
        (
            r["problem"],
            r["language"],
            r["verdict"] or r["status"],
            _fmt(r["median_ms"], ".4f"),
            _fmt(r["eager_ms"], ".4f"),
            _fmt(r["speedup"], ".2f"),
            _fmt(r.get("achieved_gbps"), ".0f"),
            _fmt(r.get("fraction_of_bound"), ".0%"),
            r["device"] or "-",
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    for line in [header, *lines]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="*", help="problem names (default: all with reference kernels)")
    parser.add_argument("--languages", nargs="*", default=list(LANGUAGES), choices=list(LANGUAGES))
    parser.add_argument("--device", default="cuda", choices=["cuda", "auto", "cpu"])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--compile-baseline", action="store_true", help="also time torch.compile (slow)")
    parser.add_argument("--build-workers", type=int, default=min(8, os.cpu_count() or 1))
    parser.add_argument(
        "--merge", action="store_true", help="keep rows of --out for kernels not run now (split long runs)"
    )
    args = parser.parse_args(argv)

    jobs = _jobs(args.only, args.languages)
    if not jobs:
        print("no reference kernels match", file=sys.stderr)
        return 2
    options = EvalOptions(device=args.device, trials=args.trials, compile_baseline=args.compile_baseline)
    print(f"{len(jobs)} reference kernels; prebuilding native ones…", flush=True)
    _prebuild(jobs, options, args.build_workers)
    ceilings = _ceilings(args.device) if args.device != "cpu" else None

    import torch

    doc: dict[str, Any] = {
        "what": "reference kernels (problems/kernels) judged by evaluator.api.evaluate",
        "statistic": "median of L2-flushed device-event timings; speedup = eager median / kernel median",
        "sizes": "each problem's full size as defined in problems/level*/<name>.py",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "host": platform.node(),
        "torch": torch.__version__,
        "ceilings": ceilings.model_dump(mode="json") if ceilings is not None else None,
        "rows": [],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.merge and args.out.exists():
        running = {(p.name, lang) for p, lang, _ in jobs}
        previous = json.loads(args.out.read_text()).get("rows", [])
        doc["rows"] = [r for r in previous if (r["problem"], r["language"]) not in running]
    failures = 0
    for problem_entry, lang, path in jobs:
        problem = Problem.from_file(problem_entry.path)
        submission = Submission(
            source=path.read_text(),
            language=LANGUAGES[lang],
            filename=path.name,
            metadata={"suite": "reference"},
        )
        started = time.monotonic()
        try:
            result = evaluate(problem, submission, options)
        except Exception as exc:  # noqa: BLE001 - kjudge's own failure: record it and go on
            result = Result(problem_id=problem.id, status="error", message=f"{type(exc).__name__}: {exc}")
        row = _row(problem_entry, lang, result, ceilings)
        row["seconds"] = round(time.monotonic() - started, 1)
        # Rows of a --merge keep the commit and date they were measured at.
        row["commit"], row["date"] = doc["commit"], doc["date"]
        doc["rows"].append(row)
        failures += row["verdict"] != "correct"
        print(
            f"{problem_entry.name}/{lang}: {row['verdict'] or row['status']} "
            f"median {_fmt(row['median_ms'], '.4f')} ms, eager {_fmt(row['eager_ms'], '.4f')} ms, "
            f"speedup {_fmt(row['speedup'], '.2f')}" + (f" — {row['message']}" if row["message"] else ""),
            flush=True,
        )
        args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print()
    print_table(doc["rows"])
    print(f"\n{len(jobs) - failures}/{len(jobs)} correct in this run; results in {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
