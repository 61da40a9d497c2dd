"""`kjudge worker`: one pinned Celery worker process per GPU (and/or one CPU worker)."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "worker",
        help="run evaluation workers: one process per GPU, pinned, concurrency 1",
        description=(
            "Starts one Celery worker per selected GPU, each pinned with CUDA_VISIBLE_DEVICES (NVIDIA) or "
            "ROCR_VISIBLE_DEVICES (ROCm) and consuming the queues of its architecture (worker/routing.py). "
            "With neither --gpus nor --cpu: every GPU, or a CPU worker on a machine without one. "
            "Broker and database come from KJUDGE_BROKER_URL / KJUDGE_DATABASE_URL."
        ),
    )
    p.add_argument("--gpus", metavar="all|0,1,...", help="GPUs to start workers for")
    p.add_argument("--cpu", action="store_true", help="also start a CPU worker (queues eval.cpu*)")
    p.add_argument("--queues", metavar="Q1,Q2", help="consume exactly these queues (overrides routing)")
    p.add_argument(
        "--take-any", action="store_true", help="the CPU worker also takes target 'any' (eval.any)"
    )
    p.add_argument(
        "--embedded",
        action="store_true",
        help="one worker for `kjudge serve`: GPU 0 or the CPU, serving every queue it can",
    )
    p.add_argument("--loglevel", default="INFO", help="Celery log level (default INFO)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from worker.devices import list_gpus
    from worker.launcher import (
        LaunchError,
        Supervisor,
        WorkerSpec,
        cpu_spec,
        embedded_spec,
        gpu_spec,
        parse_gpu_selection,
    )

    logging.basicConfig(level=logging.INFO, format="%(asctime)s kjudge-worker %(levelname)s %(message)s")
    queues = [q.strip() for q in args.queues.split(",") if q.strip()] if args.queues else None
    specs: list[WorkerSpec] = []
    try:
        if args.embedded:
            specs.append(embedded_spec(list_gpus()))
        else:
            if args.gpus:
                specs.extend(gpu_spec(g, queues) for g in parse_gpu_selection(args.gpus, list_gpus()))
            elif not args.cpu:
                gpus = list_gpus()
                specs.extend(gpu_spec(g, queues) for g in gpus)
                if not gpus:
                    print("kjudge worker: no GPU visible; starting a CPU worker", file=sys.stderr)
                    specs.append(cpu_spec(queues, take_any=args.take_any))
            if args.cpu:
                specs.append(cpu_spec(queues, take_any=args.take_any))
    except LaunchError as exc:
        print(f"kjudge worker: {exc}", file=sys.stderr)
        return 2
    for spec in specs:
        print(
            f"kjudge worker: {spec.name} ({spec.backend} {spec.arch}) on {','.join(spec.queues)}",
            file=sys.stderr,
        )
    parent = None
    if args.embedded:
        # Set by `kjudge serve` before the (slow) GPU probe, so its death is noticed even then.
        parent = int(os.environ.get("KJUDGE_SERVE_PID") or os.getppid())
    return Supervisor(specs, loglevel=args.loglevel, parent_pid=parent).run()
