"""Hooks into a Celery worker's life: fork safety, the workers registry and the reconciler.

Connected by worker.tasks (imported only by worker processes):
- worker_process_init (each pool child): drop the database connections inherited over fork;
  keep a spare run child ready (evaluator.api.enable_spares: the pool child is the process that
  evaluates, so the spare must be its child, started from its main thread).
- worker_process_shutdown (each pool child): kill the waiting spare.
- worker_init (main process, before it consumes and before the pool forks): a compile pool
  imports torch and the build modules once, for every slot it forks; register this incarnation
  in `workers` and requeue the claims of this host's dead worker processes (worker.holder) to
  the front of their queues — before consuming, so that this worker's first job is its
  predecessor's.
- worker_ready (main process): start one background thread that heartbeats (and obeys a drain
  request), recovers orphans and runs the reconciler periodically; on a GPU worker, prepare the
  device once (probe, ceilings, precompiled header).
- worker_shutdown (main process): stop the thread and mark the worker offline.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery.signals import (
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

from core.queues import queues_for_worker
from db.session import get_engine, session_scope
from worker import reconciler, registry
from worker.config import DRAINED_EXIT, WorkerSettings, get_worker_settings

log = logging.getLogger(__name__)

_connected = False
_loop: BackgroundLoop | None = None


def worker_queues(wsettings: WorkerSettings) -> list[str]:
    """The queues this worker consumes: explicit KJUDGE_WORKER_QUEUES, else core.queues' answer."""
    if wsettings.queues:
        return [q.strip() for q in wsettings.queues.split(",") if q.strip()]
    take_any = True if wsettings.backend != "cpu" else wsettings.take_any
    return queues_for_worker(wsettings.backend, wsettings.arch, take_any=take_any)


def worker_target(wsettings: WorkerSettings) -> dict[str, Any]:
    target: dict[str, Any] = {
        "backend": wsettings.backend,
        "arch": wsettings.arch,
        "device": wsettings.device_name,
    }
    if wsettings.gpu is not None:
        target["gpu"] = wsettings.gpu
    return target


class BackgroundLoop:
    """Heartbeat every heartbeat_interval_s, reconcile every reconcile_interval_s; never dies on
    a database or broker outage (it logs and tries again on the next tick)."""

    def __init__(self, app: Any, wsettings: WorkerSettings) -> None:
        self._app = app
        self._ws = wsettings
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kjudge-background", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        next_reconcile = 0.0  # a fresh worker reconciles at once: it may be the one replacing a dead one
        tick = min(self._ws.heartbeat_interval_s, self._ws.reconcile_interval_s)
        while True:
            if self._heartbeat():
                _begin_drain(self._ws)
            if time.monotonic() >= next_reconcile:
                try:
                    reconciler.recover_orphans(self._ws.host, self._app)
                    reconciler.run_once(self._app, limit=self._ws.reconcile_batch)
                except Exception as exc:
                    log.warning("reconciler pass failed (will retry): %s", exc)
                next_reconcile = time.monotonic() + self._ws.reconcile_interval_s
            if self._stop.wait(tick):
                return

    def _heartbeat(self) -> bool:
        """Returns whether a drain was requested."""
        try:
            with session_scope() as session:
                drain = registry.beat(session, self._ws.worker_id, stats=registry.collect_stats())
            if drain is None:
                _register(self._ws)
            return bool(drain)
        except Exception as exc:
            log.warning("worker heartbeat failed (will retry): %s", exc)
            return False


def _begin_drain(wsettings: WorkerSettings) -> None:
    """Celery's warm shutdown, with kjudge's exit status: stop consuming, let the current
    evaluation finish and ack, exit DRAINED_EXIT (the launcher then leaves it stopped)."""
    from celery.worker import state

    if state.should_stop in (None, False):
        log.warning(
            "worker %s: drain requested; finishing the current job, then exiting", wsettings.worker_id
        )
        state.should_stop = DRAINED_EXIT


def _register(wsettings: WorkerSettings) -> None:
    try:
        with session_scope() as session:
            registry.register(
                session,
                wsettings.worker_id,
                host=wsettings.host,
                queues=worker_queues(wsettings),
                target=worker_target(wsettings),
            )
    except Exception as exc:  # the database may be down at start; the heartbeat keeps trying
        log.warning("could not register worker %s: %s", wsettings.worker_id, exc)


def _on_process_init(**_: Any) -> None:
    # Pooled connections opened before fork belong to the parent; using them from two processes
    # corrupts the protocol stream. close=False leaves the parent's sockets alone.
    get_engine().dispose(close=False)
    # A compile slot runs no candidate: a waiting run child there would only hold memory.
    if get_worker_settings().stage != "compile":
        _enable_spares(True)


def _on_process_shutdown(**_: Any) -> None:
    _enable_spares(False)


def _enable_spares(on: bool) -> None:
    """Issue #2: a run child that imported torch while the worker waited saves ~3 s per job.
    Next to prepare() in spirit (worker start-up), but here: prepare runs in the main process,
    evaluations in the pool child."""
    from evaluator.api import enable_spares
    from worker.pipeline import parse_cpus

    wsettings = get_worker_settings()
    try:
        enable_spares(on, size=wsettings.spares, cpus=parse_cpus(wsettings.spare_cpus) or None)
    except Exception as exc:
        log.warning("spare run children %s failed: %s", "enabling" if on else "stopping", exc)


def _prepare_device(wsettings: WorkerSettings) -> None:
    """Probe the GPU, measure its ceilings and build the precompiled header once, at start-up
    (the evaluator caches each on disk), so the first job does not pay for them."""
    from core.settings import get_settings
    from evaluator.api import prepare

    try:
        for line in prepare(wsettings.eval_device, get_settings().home_dir / "cache"):
            log.info("worker prepared: %s", line)
    except Exception as exc:
        log.warning("worker preparation failed (the first job will do it): %s", exc)


def _on_init(sender: Any = None, **_: Any) -> None:
    wsettings = get_worker_settings()
    if wsettings.stage == "compile":
        _preload_compile()
    _register(wsettings)
    try:
        reconciler.recover_orphans(wsettings.host, getattr(sender, "app", None))
    except Exception as exc:  # the database may be down at start; the background loop retries
        log.warning("could not recover this host's orphaned claims yet: %s", exc)


def _preload_compile() -> None:
    """Before the pool forks (worker_init runs in the main process ahead of it)."""
    from worker.compile_stage import preload

    try:
        log.info("compile pool preloaded torch and the build modules in %.1f s", preload())
    except Exception as exc:  # each slot then imports on its first job, as before
        log.warning("compile pool preload failed: %s", exc)


def _prepare_compile(wsettings: WorkerSettings) -> None:
    """The compile pool's start-up: the precompiled header, and each run stage's target probe
    (on disk: the first compile of each target does not wait for a device child)."""
    from core.settings import get_settings
    from evaluator.api import _native_cache
    from evaluator.build import prepare_toolchain
    from worker import pipeline
    from worker.compile_stage import probe

    try:
        backends = set()
        for target in pipeline.load_targets(wsettings.stage_targets):
            found = probe(target)
            backends.add(found.backend)
            log.info("compile pool builds %s for %s %s", target.run_queue, found.backend.value, found.arch)
        # The lite runtime of a CUDA stage's units too (the CPU one is always built).
        cuda = next((b for b in backends if b.value == "cuda"), None)
        log.info(
            "compile pool prepared: %s",
            prepare_toolchain(_native_cache(get_settings().home_dir / "cache"), cuda),
        )
    except Exception as exc:
        log.warning("compile pool preparation failed (the first job will do it): %s", exc)


def _on_ready(sender: Any = None, **_: Any) -> None:
    global _loop
    app = sender.app if sender is not None else None
    wsettings = get_worker_settings()
    _loop = BackgroundLoop(app, wsettings)
    _loop.start()
    if wsettings.stage == "compile":
        threading.Thread(
            target=_prepare_compile, args=(wsettings,), name="kjudge-prepare", daemon=True
        ).start()
    elif wsettings.backend != "cpu":
        threading.Thread(
            target=_prepare_device, args=(wsettings,), name="kjudge-prepare", daemon=True
        ).start()


def _on_shutdown(**_: Any) -> None:
    if _loop is not None:
        _loop.stop()
    wsettings = get_worker_settings()
    try:
        with session_scope() as session:
            registry.set_status(session, wsettings.worker_id, "offline")
    except Exception as exc:
        log.warning("could not mark worker %s offline: %s", wsettings.worker_id, exc)


def connect() -> None:
    global _connected
    if _connected:
        return
    worker_process_init.connect(_on_process_init, weak=False)
    worker_process_shutdown.connect(_on_process_shutdown, weak=False)
    worker_init.connect(_on_init, weak=False)
    worker_ready.connect(_on_ready, weak=False)
    worker_shutdown.connect(_on_shutdown, weak=False)
    _connected = True
