"""`kjudge workers` and `kjudge drain WORKER`: the scaling verbs, over the API's /v1/workers.

The server is KJUDGE_URL (default http://127.0.0.1:8000, i.e. `kjudge serve`); draining needs a
key with the `admin` scope (KJUDGE_API_KEY) unless the server runs keyless on loopback.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=None, help="API address (default: $KJUDGE_URL or http://127.0.0.1:8000)")
    p.add_argument("--api-key", default=None, help="API key (default: $KJUDGE_API_KEY)")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    w = subparsers.add_parser(
        "workers",
        help="list evaluation workers: host, GPU, target, status, current job, heartbeat age",
    )
    w.add_argument("--json", action="store_true", help="print JSON")
    w.add_argument("--online", action="store_true", help="leave out workers marked offline")
    _common(w)
    w.set_defaults(handler=run_workers)

    d = subparsers.add_parser(
        "drain",
        help="stop a worker gracefully: it finishes its current job, takes no more and exits",
        description="WORKER is an id from `kjudge workers` (host:gpu or host:cpu). The worker sees "
        "the request with its next heartbeat (default every 10 s); its launcher does not restart it.",
    )
    d.add_argument("worker", help="worker id, e.g. node7:3")
    d.add_argument("--wait", type=float, default=0.0, metavar="S", help="wait up to S seconds for it to exit")
    _common(d)
    d.set_defaults(handler=run_drain)


def _client(args: argparse.Namespace) -> Any:
    from kjudge.client import Client

    return Client(args.url, args.api_key)


def _fail(message: str) -> int:
    print(f"kjudge: {message}", file=sys.stderr)
    return 1


def run_workers(args: argparse.Namespace) -> int:
    from kjudge.client import KjudgeError

    try:
        with _client(args) as client:
            workers = client.workers(include_offline=not args.online)
    except KjudgeError as exc:
        return _fail(exc.message if exc.status == 0 else str(exc))
    if args.json:
        print(json.dumps([w.model_dump(mode="json") for w in workers], indent=2))
        return 0
    header = ("WORKER", "HOST", "GPU", "TARGET", "STATUS", "CURRENT JOB", "HEARTBEAT", "EVALS", "BUSY")
    rows = [header]
    for w in workers:
        target = f"{w.target.get('backend', '?')}:{w.target.get('arch', '?')}"
        busy = f"{w.busy_ratio:.0%}" if w.busy_ratio is not None else "-"
        rows.append(
            (
                w.id,
                w.host,
                w.gpu if w.gpu is not None else "-",
                target,
                w.status,
                w.current_job or "-",
                f"{w.heartbeat_age_s:.0f}s ago",
                str(w.evaluations),
                busy,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip())
    if not workers:
        print("(no worker has registered yet)", file=sys.stderr)
    return 0


def run_drain(args: argparse.Namespace) -> int:
    from kjudge.client import KjudgeError

    try:
        with _client(args) as client:
            client.drain(args.worker)
            print(f"{args.worker}: draining (finishes its current job, then exits)")
            deadline = time.monotonic() + args.wait
            while args.wait and time.monotonic() < deadline:
                status = {w.id: w.status for w in client.workers()}.get(args.worker)
                if status == "offline":
                    print(f"{args.worker}: offline")
                    return 0
                time.sleep(1.0)
    except KjudgeError as exc:
        return _fail(exc.message if exc.status == 0 else str(exc))
    if args.wait:
        return _fail(f"{args.worker} did not exit within {args.wait:.0f} s")
    return 0
