"""`kjudge eval`: evaluate one kernel locally, no servers.

Exit 0 whenever an evaluation completed (whatever the verdict), 2 for bad usage (missing file,
unknown language, unusable problem, no such device), 1 for a failure of kjudge itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evaluator.result import Language


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("eval", help="evaluate a kernel against a problem locally")
    p.add_argument("--problem", required=True, type=Path, help="problem file (KernelBench format)")
    p.add_argument("--kernel", required=True, type=Path, help="candidate source file")
    p.add_argument(
        "--language",
        choices=[lang.value for lang in Language],
        help="default: inferred from the file (.cpp cpp, .cu cuda, .hip hip, .py triton/kernelbench)",
    )
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--entry", default="forward", help="function a cpp/cuda/hip kernel exports")
    p.add_argument("--json", action="store_true", help="print the Result as JSON")
    p.add_argument("--trials", type=int, default=5, help="correctness trials (fresh inputs each)")
    p.add_argument("--seed", type=int, help="base seed (default: a fresh one)")
    p.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit of the run, seconds")
    p.add_argument("--no-timing", action="store_true", help="check correctness only")
    p.add_argument("--no-baselines", action="store_true", help="do not time the reference")
    p.add_argument(
        "--compile-baseline",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also time torch.compile(reference) (default: on GPU targets only)",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="after a correct verdict, profile the kernel's own GPU kernels (ncu / rocprofv3) into `profile`",
    )
    p.add_argument(
        "--profile-timeout", type=float, default=300.0, help="wall-clock limit of the profiled run, seconds"
    )
    p.set_defaults(handler=run)


def _usage(message: str) -> int:
    print(f"kjudge eval: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    from evaluator.api import EvaluationError, evaluate
    from evaluator.cli import format_result
    from evaluator.languages.infer import UnknownLanguage
    from evaluator.options import EvalOptions, Submission, SubmissionError
    from evaluator.problem import Problem, ProblemError
    from evaluator.targets.detect import TargetUnavailable

    if args.trials < 1:
        return _usage("--trials must be at least 1")
    if args.timeout <= 0:
        return _usage("--timeout must be positive")
    if args.profile_timeout <= 0:
        return _usage("--profile-timeout must be positive")
    try:
        problem = Problem.from_file(args.problem)
        submission = Submission.from_file(
            args.kernel, language=Language(args.language) if args.language else None, entry=args.entry
        )
    except (ProblemError, SubmissionError) as exc:
        return _usage(str(exc))
    options = EvalOptions(
        device=args.device,
        trials=args.trials,
        seed=args.seed,
        run_timeout_s=args.timeout,
        measure_timing=not args.no_timing,
        baselines=not args.no_baselines,
        compile_baseline=args.compile_baseline,
        profile=args.profile,
        profile_timeout_s=args.profile_timeout,
    )
    try:
        result = evaluate(problem, submission, options)
    except (UnknownLanguage, TargetUnavailable) as exc:
        return _usage(str(exc))
    except EvaluationError as exc:
        print(f"kjudge eval: internal error: {exc}", file=sys.stderr)
        return 1
    print(result.model_dump_json(indent=2) if args.json else format_result(result))
    return 0
