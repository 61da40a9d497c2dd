"""The compile stage of a pipelined host (worker/pipeline.py): one slot of the host-wide pool.

For a claimed row (status `compiling`): build ahead with `evaluator.api.prebuild` into the host's
cache; a compile error is the verdict, finished here without a device. Otherwise hand the job to
a run stage of this host (`kjudge.run` on the target's run queue, sent after the claim's commit)
and keep the attempt's lease alive until a run stage takes the row over. Holding the slot while
the built job waits is the pool's backpressure: a host never builds more than its pool size ahead
of its devices, so a backlog stays in the shared queue where other hosts can take it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from core.queues import RUN_TASK_NAME
from core.settings import get_settings
from db.session import session_scope
from evaluator.result import Result, Target
from worker import pipeline, store
from worker.celery_app import app
from worker.config import get_worker_settings
from worker.periodic import Periodic

log = logging.getLogger(__name__)


class CompileLease:
    """Renews the attempt's lease every lease/3 seconds while this slot builds and while its built
    job waits; `taken_over` once a run stage owns the row, `lost` if the attempt went elsewhere."""

    def __init__(self, claimed: store.Claim, worker_id: str, lease_s: float) -> None:
        self._claimed = claimed
        self._worker_id = worker_id
        self._lease_s = lease_s
        self.taken_over = False
        self.lost = False

    def renew(self) -> bool:
        """One renewal; True while this slot still holds the row."""
        try:
            with session_scope() as session:
                state = store.renew_compile_lease(
                    session, self._claimed.submission_id, self._claimed.token, self._worker_id, self._lease_s
                )
        except Exception as exc:  # a database blip: the lease has slack, try again next tick
            log.warning("lease renewal for %s failed: %s", self._claimed.submission_id, exc)
            return True
        if not state.waiting:
            self.taken_over = state.taken_over
            self.lost = not state.taken_over
        return state.waiting


def preload() -> float:
    """Import what every compile job needs (torch for its include paths and ABI, the evaluator's
    build modules) in the pool's main process, before the prefork pool forks: each slot, and a
    slot forked to replace a dead one, starts with it loaded. Imported per slot instead, every
    slot's first job paid a torch import, and a pool of many slots (13 on a 16-core GPU host)
    has many first jobs. Returns the seconds it took."""
    started = time.monotonic()
    from torch.utils import cpp_extension  # noqa: F401  (prebuild's stand-in facts read it)

    from evaluator import api  # noqa: F401
    from evaluator.build import lite
    from evaluator.build.toolchain import torch_info

    torch_info()
    lite.cuda_enabled()
    return time.monotonic() - started


def stage_target(claimed: store.Claim) -> pipeline.StageTarget:
    from worker.tasks import PermanentFailure

    targets = pipeline.load_targets(get_worker_settings().stage_targets)
    found = pipeline.target_for_queue(claimed.queue, targets)
    if found is None:
        # The pool consumes exactly its targets' queues, so this is a misconfigured --queues.
        raise PermanentFailure(f"no run stage on this host serves queue {claimed.queue}")
    return found


def probe(target: pipeline.StageTarget) -> Target:
    """The evaluator's Target for a run stage, as that stage sees it (same visibility variables,
    so the same cached probe answer and the same build cache key)."""
    import tempfile
    from pathlib import Path

    from evaluator.api import child_env, probe_target

    cache_dir = get_settings().home_dir / "cache"
    with tempfile.TemporaryDirectory(prefix="kjudge-compile-probe-") as tmp:
        env = child_env(Path(tmp), cache_dir, None) | target.visibility
        return probe_target(target.device, env, cache_dir)


def compile_and_hand_off(claimed: store.Claim) -> str:
    from evaluator.api import prebuild
    from worker.tasks import _finalize, eval_options, load_claim

    settings = get_settings()
    wsettings = get_worker_settings()
    target = stage_target(claimed)
    problem, submission = load_claim(claimed)
    lease = CompileLease(claimed, wsettings.worker_id, settings.running_lease_s)
    started = time.monotonic()
    with Periodic(lease.renew, max(settings.running_lease_s / 3.0, 0.5), "kjudge-compile-lease"):
        outcome = prebuild(problem, submission, eval_options(target.device), target=probe(target))
    compile_s = time.monotonic() - started
    if lease.lost:
        log.warning("built %s but attempt %d no longer owns it", claimed.submission_id, claimed.token)
        return "superseded"
    if outcome.result is not None:
        return _finish_here(claimed, _finalize(outcome.result, claimed))

    handoff: dict[str, Any] = {
        "compile_s": round(compile_s, 4),
        "compile_steps_s": {k: v for k, v in outcome.durations_s.items() if k.startswith("compile_")},
        "compile_log": outcome.log[-2000:],
        "built": outcome.built,
        "cached": outcome.cached,
        "handed_off_at": time.time(),
    }
    # The claim (status `compiling`, this slot's name, the token) is committed: the message may go.
    app.send_task(RUN_TASK_NAME, args=[claimed.submission_id, claimed.token, handoff], queue=target.run_queue)
    return _wait_for_take_over(claimed, lease, wsettings.handoff_poll_s, wsettings.handoff_timeout_s)


def _finish_here(claimed: store.Claim, result: Result) -> str:
    with session_scope() as session:
        stored = store.finish(session, claimed, result)
    return str(result.verdict) if stored else "superseded"


def _wait_for_take_over(claimed: store.Claim, lease: CompileLease, poll_s: float, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not lease.renew():
            return "handed_off" if lease.taken_over else "superseded"
        time.sleep(poll_s)
    log.warning(
        "no run stage took %s (attempt %d) within %.0f s; its lease will lapse and the reconciler "
        "sends it again",
        claimed.submission_id,
        claimed.token,
        timeout_s,
    )
    return "handoff_timeout"
