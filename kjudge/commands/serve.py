"""`kjudge serve`: the API plus one local worker, on embedded defaults or on real services.

With nothing configured, state lives under KJUDGE_HOME (default ~/.kjudge): a SQLite database,
migrated on start, and kombu's filesystem broker — no PostgreSQL, no Redis. KJUDGE_DATABASE_URL
and KJUDGE_BROKER_URL switch to PostgreSQL and Redis. Either way the code paths are the
production ones: the API process stores and enqueues, a `kjudge worker` process (started here as
a child) claims, evaluates and writes the result, and its reconciler recovers lost messages.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import os
import signal
import subprocess
import sys
import time

LOOPBACK_NAMES = {"localhost"}


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "serve",
        help="run the API and a local worker (embedded defaults: no servers needed)",
        description=(
            "Runs the HTTP API (OpenAPI at /docs) and one local evaluation worker. State under "
            "KJUDGE_HOME (default ~/.kjudge); KJUDGE_DATABASE_URL / KJUDGE_BROKER_URL select "
            "PostgreSQL / Redis. Without API keys the server listens on loopback only."
        ),
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--no-worker", action="store_true", help="API only (workers run elsewhere)")
    p.add_argument("--no-migrate", action="store_true", help="do not upgrade the database schema on start")
    p.add_argument("--workers", type=int, default=1, help="API processes (default 1)")
    p.add_argument("--log-level", default="info", help="uvicorn log level (default info)")
    p.set_defaults(handler=run)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    from core.settings import get_settings

    settings = get_settings()
    if not is_loopback(args.host) and not settings.api_keys_required:
        print(
            f"kjudge serve: refusing to listen on {args.host} without API keys. Set "
            "KJUDGE_API_KEYS_REQUIRED=true and create a key with `kjudge keys create --name NAME`, "
            "or listen on 127.0.0.1.",
            file=sys.stderr,
        )
        return 2
    settings.home_dir.mkdir(parents=True, exist_ok=True)
    from db.prepare import DatabaseNotReady, prepare_database

    try:
        # Migrated (unless --no-migrate) and checked writable: the same preparation as every
        # command that writes the database.
        prepare_database(settings, migrate=not args.no_migrate)
    except DatabaseNotReady as exc:
        print(f"kjudge serve: {exc}", file=sys.stderr)
        return 1

    worker: subprocess.Popen[bytes] | None = None
    if not args.no_worker:
        # Its own session so that stopping it (and its pool process) never signals this process.
        worker = subprocess.Popen(
            [sys.executable, "-m", "kjudge", "worker", "--embedded"],
            start_new_session=True,
            env={**os.environ, "KJUDGE_SERVE_PID": str(os.getpid())},
        )
    try:
        import uvicorn

        uvicorn.run(
            "api.app:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level=args.log_level,
        )
    finally:
        if worker is not None:
            _stop_worker(worker)
    return 0


def _stop_worker(proc: subprocess.Popen[bytes], grace_s: float = 20.0) -> None:
    """Warm shutdown (the current evaluation finishes), then a kill after grace_s; then whatever
    is left of the worker's session."""
    if proc.poll() is None:
        # The launcher forwards SIGTERM to its Celery children (a warm shutdown for each).
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
    # The launcher's session holds every worker process and what they started. A warm shutdown
    # ends the Celery processes, not a compiler their start-up began (the compile pool builds
    # the precompiled header in a thread: g++ runs on for a minute after its parent is gone),
    # so anything still in the session now is an orphan of this serve: stop it with serve.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
