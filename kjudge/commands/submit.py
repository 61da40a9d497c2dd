"""`kjudge submit`, `kjudge status`, `kjudge results`: the HTTP client from the shell.

The server is KJUDGE_URL (default http://127.0.0.1:8000, i.e. `kjudge serve`); the key is
KJUDGE_API_KEY (none needed on the embedded default).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

EXTENSIONS = {".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".cu": "cuda", ".hip": "hip"}


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=None, help="API address (default: $KJUDGE_URL or http://127.0.0.1:8000)")
    p.add_argument("--api-key", default=None, help="API key (default: $KJUDGE_API_KEY)")
    p.add_argument("--json", action="store_true", help="print JSON")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "submit",
        help="submit a kernel to a kjudge server",
        description="Submits KERNEL for PROBLEM. PROBLEM is a problem id, a problem name, or a path to a "
        "problem file (added to the server first if it is new).",
    )
    p.add_argument("problem", help="problem id, name, or path to a KernelBench-format .py file")
    p.add_argument("kernel", help="path to the candidate source")
    p.add_argument(
        "--language", "-l", default=None, help="kernelbench|hip|cuda|triton|cpp (default: from the file)"
    )
    p.add_argument(
        "--target", "-t", default=None, help="cpu, cuda, rocm, sm_90, gfx942 ... (default: any GPU)"
    )
    p.add_argument(
        "--entry", default=None, help="function name for raw hip/cuda/cpp sources (default forward)"
    )
    p.add_argument("--model", default=None, help="metadata.model")
    p.add_argument("--run-id", default=None, help="metadata.run_id")
    p.add_argument(
        "--meta", action="append", default=[], metavar="KEY=VALUE", help="more metadata (repeatable)"
    )
    p.add_argument("--reuse", action="store_true", help="reuse the stored result of an identical submission")
    p.add_argument(
        "--profile",
        action="store_true",
        help="add a hardware profile of the kernel (result.profile) after a correct verdict",
    )
    p.add_argument("--wait", action="store_true", help="wait for the verdict and print it")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds --wait waits (default 900)")
    _common(p)
    p.set_defaults(handler=run_submit)

    s = subparsers.add_parser("status", help="show one submission (and its result once done)")
    s.add_argument("id", help="submission id")
    s.add_argument("--wait", type=float, default=0.0, metavar="S", help="long-poll up to S seconds for done")
    _common(s)
    s.set_defaults(handler=run_status)

    r = subparsers.add_parser("results", help="list submissions, newest first")
    r.add_argument("--problem", dest="problem_id", default=None, help="problem id")
    r.add_argument("--run-id", default=None)
    r.add_argument("--model", default=None)
    r.add_argument("--verdict", default=None)
    r.add_argument("--status", default=None)
    r.add_argument("--since", default=None, help="ISO 8601 time")
    r.add_argument("--until", default=None, help="ISO 8601 time")
    r.add_argument("--limit", type=int, default=50, help="how many to show (default 50)")
    _common(r)
    r.set_defaults(handler=run_results)


def infer_language(path: Path, source: str) -> str:
    if path.suffix in EXTENSIONS:
        return EXTENSIONS[path.suffix]
    if path.suffix == ".py":
        return (
            "triton"
            if ("import triton" in source or "from triton" in source) and "load_inline" not in source
            else "kernelbench"
        )
    raise ValueError(
        f"cannot tell the language of {path.name}: pass --language (kernelbench, hip, cuda, triton, cpp)"
    )


def _client(args: argparse.Namespace) -> Any:
    from kjudge.client import Client

    return Client(args.url, args.api_key)


def _fail(message: str) -> int:
    print(f"kjudge: {message}", file=sys.stderr)
    return 1


def _problem_ref(client: Any, ref: str) -> str:
    """A path becomes the problem's id (sha256 of its text), added to the server when new."""
    path = Path(ref)
    if not (path.suffix == ".py" and path.is_file()):
        return ref
    source = path.read_text(encoding="utf-8")
    pid = hashlib.sha256(source.encode("utf-8")).hexdigest()
    from kjudge.client import KjudgeError

    try:
        client.problem(pid)
    except KjudgeError as exc:
        if exc.status != 404:
            raise
        client.create_problem(path.stem, source)
    return pid


def run_submit(args: argparse.Namespace) -> int:
    from kjudge.client import KjudgeError

    kernel = Path(args.kernel)
    if not kernel.is_file():
        return _fail(f"no such kernel file: {kernel}")
    source = kernel.read_text(encoding="utf-8")
    try:
        language = args.language or infer_language(kernel, source)
    except ValueError as exc:
        return _fail(str(exc))
    metadata: dict[str, Any] = {}
    for item in args.meta:
        key, sep, value = item.partition("=")
        if not sep:
            return _fail(f"--meta wants KEY=VALUE, got {item!r}")
        metadata[key] = value
    if args.model:
        metadata["model"] = args.model
    if args.run_id:
        metadata["run_id"] = args.run_id
    try:
        with _client(args) as client:
            problem_id = _problem_ref(client, args.problem)
            ref = client.submit(
                problem_id,
                source,
                language,
                target=args.target,
                entry=args.entry,
                metadata=metadata,
                reuse=args.reuse,
                profile=args.profile,
            )
            if not args.wait:
                print(ref.model_dump_json() if args.json else f"{ref.id} {ref.status}")
                return 0
            sub = client.wait(ref.id, timeout=args.timeout)
    except KjudgeError as exc:
        return _fail(exc.message if exc.status == 0 else str(exc))
    except TimeoutError as exc:
        return _fail(str(exc))
    _print_submission(sub, args.json)
    return 0


def run_status(args: argparse.Namespace) -> int:
    from kjudge.client import KjudgeError

    try:
        with _client(args) as client:
            sub = client.get(args.id, wait=args.wait)
    except KjudgeError as exc:
        return _fail(exc.message if exc.status == 0 else str(exc))
    _print_submission(sub, args.json)
    return 0


def run_results(args: argparse.Namespace) -> int:
    from kjudge.client import KjudgeError

    filters = {
        k: getattr(args, k) for k in ("problem_id", "run_id", "model", "verdict", "status", "since", "until")
    }
    rows = []
    try:
        with _client(args) as client:
            for sub in client.results(**filters, limit=min(args.limit, 500)):
                rows.append(sub)
                if len(rows) >= args.limit:
                    break
    except KjudgeError as exc:
        return _fail(exc.message if exc.status == 0 else str(exc))
    if args.json:
        print(json.dumps([r.model_dump(mode="json", exclude_none=True) for r in rows], indent=2))
        return 0
    print(
        f"{'created':19}  {'id':36}  {'status':9}  {'verdict':13}  {'median_ms':>10}  {'speedup':>8}  model"
    )
    for r in rows:
        print(
            f"{r.created_at:%Y-%m-%d %H:%M:%S}  {r.id:36}  {r.status:9}  {r.verdict or '-':13}  "
            f"{_num(r.median_ms, 4):>10}  {_num(r.speedup_vs_eager, 2):>8}  {r.metadata.get('model') or ''}"
        )
    return 0


def _num(x: float | None, digits: int) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _print_submission(sub: Any, as_json: bool) -> None:
    if as_json:
        print(sub.model_dump_json(indent=2, exclude_none=True))
        return
    print(f"submission {sub.id}: {sub.status}" + (f", verdict {sub.verdict}" if sub.verdict else ""))
    result = sub.result
    res: dict[str, Any] = result if isinstance(result, dict) else (result.model_dump() if result else {})
    if sub.message or res.get("message"):
        print(f"  message: {sub.message or res.get('message')}")
    corr = res.get("correctness") or {}
    if corr:
        print(
            f"  correctness: {corr.get('passed')}/{corr.get('trials')} trials, max abs err {corr.get('max_abs_err')}"
        )
    timing = res.get("timing") or {}
    if timing:
        print(f"  timing: median {timing.get('median_ms'):.4f} ms over {timing.get('n')} runs")
    speed = res.get("speedup") or {}
    if speed and speed.get("vs_eager") is not None:
        print(f"  speedup vs eager: {speed['vs_eager']:.2f}x")
    target = res.get("target") or {}
    if target:
        print(f"  target: {target.get('backend')} {target.get('arch')} ({target.get('device')})")
    if res.get("flags"):
        print(f"  flags: {', '.join(res['flags'])}")
    profile = res.get("profile") or {}
    if profile:
        line = profile.get("bottleneck") if profile.get("available") else f"none: {profile.get('message')}"
        print(f"  profile: {line}")
    if sub.reused_from:
        print(f"  reused the result of {sub.reused_from}")
