"""`kjudge worker`: one pinned Celery worker process per GPU (and/or one CPU worker)."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "worker",
        help="run evaluation workers: a shared compile pool ahead of one pinned run stage per GPU",
        description=(
            "Starts one run stage per selected GPU (a Celery worker pinned with CUDA_VISIBLE_DEVICES "
            "(NVIDIA) or ROCR_VISIBLE_DEVICES (ROCm) and to cores of its own, concurrency 1) and one compile pool for "
            "the host that consumes the queues of their architectures (core/queues.py), builds "
            "ahead and hands built jobs to them (worker/pipeline.py); --serial runs one process per "
            "device that compiles and runs. With neither --gpus nor --cpu: every GPU, or the CPU on "
            "a machine without one. Broker and database come from KJUDGE_BROKER_URL / "
            "KJUDGE_DATABASE_URL."
        ),
    )
    p.add_argument("--gpus", metavar="all|0,1,...", help="GPUs to start run stages for")
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
    p.add_argument(
        "--serial",
        action="store_true",
        help="one process per device that compiles and runs each job (no compile pool ahead of it)",
    )
    p.add_argument(
        "--compile-pool",
        type=int,
        metavar="N",
        help="compile processes shared by the host's devices (default: from free cores and memory)",
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
        pipelined,
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
    # KJUDGE_WORKER_SERIAL=1: the same as --serial, for the worker `kjudge serve` starts itself.
    if not (args.serial or os.environ.get("KJUDGE_WORKER_SERIAL") == "1"):
        # `kjudge serve` starts the worker itself: its pool size comes through the environment.
        pool = args.compile_pool or int(os.environ.get("KJUDGE_WORKER_COMPILE_POOL") or 0) or None
        specs = pipelined(specs, pool_size=pool)
    for spec in specs:
        where = f", {spec.concurrency} processes" if spec.concurrency > 1 else ""
        cores = f", cores {','.join(map(str, spec.cpus))}" if spec.cpus else ""
        print(
            f"kjudge worker: {spec.name} [{spec.stage}{where}{cores}] ({spec.backend} {spec.arch}) "
            f"on {','.join(spec.queues)}",
            file=sys.stderr,
        )
    parent = None
    if args.embedded:
        # Set by `kjudge serve` before the (slow) GPU probe, so its death is noticed even then.
        parent = int(os.environ.get("KJUDGE_SERVE_PID") or os.getppid())
    return Supervisor(specs, loglevel=args.loglevel, parent_pid=parent).run()
