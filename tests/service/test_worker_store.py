"""The worker's database protocol against a real PostgreSQL: claims, fencing, one result only,
and the reconciler's decisions. No worker process here; test_worker_e2e.py runs the real thing."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from db.models import Submission
from evaluator.result import Result, Status, Verdict
from worker import store

from .conftest import Rows

pytestmark = pytest.mark.usefixtures("clean_db")

PROBLEM = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n" \
    "def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n"  # fmt: skip


@pytest.fixture()
def session(engine: sa.Engine) -> Session:
    with Session(engine, expire_on_commit=False) as s:
        yield s


@pytest.fixture()
def pid(rows: Rows) -> str:
    return rows.problem(PROBLEM, "identity")


def _claim(session: Session, sid: str, worker: str = "w:0", lease_s: float = 60, max_attempts: int = 3):
    return store.claim(session, sid, worker_id=worker, lease_s=lease_s, max_attempts=max_attempts)


def _result(pid: str, verdict: Verdict = Verdict.CORRECT) -> Result:
    return Result(problem_id=pid, verdict=verdict, compiled=True, correct=verdict == Verdict.CORRECT)


def _expire_lease(engine: sa.Engine, sid: str) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.update(Submission)
            .where(Submission.id == sid)
            .values(lease_expires_at=store.utcnow() - timedelta(seconds=1))
        )


def test_claim_is_exclusive_and_carries_the_problem(
    session: Session, engine: sa.Engine, rows: Rows, pid: str
) -> None:
    sid = rows.submission(pid, source="src", language="triton")
    first = _claim(session, sid)
    assert isinstance(first, store.Claim)
    assert (first.token, first.problem_source, first.source, first.queue) == (1, PROBLEM, "src", "eval.cpu")
    second = _claim(session, sid, worker="w:1")
    assert second == store.ClaimRefused("active")
    row = rows.row(sid)
    assert (row["status"], row["attempts"], row["worker"]) == ("compiling", 1, "w:0")
    assert row["lease_expires_at"] > store.utcnow()


def test_claim_carries_the_profile_request(session: Session, rows: Rows, pid: str) -> None:
    plain = _claim(session, rows.submission(pid))
    profiled = _claim(session, rows.submission(pid, profile=True))
    assert isinstance(plain, store.Claim) and isinstance(profiled, store.Claim)
    assert (plain.profile, profiled.profile) == (False, True)


def test_unknown_and_finished_submissions_are_refused(
    session: Session, engine: sa.Engine, rows: Rows, pid: str
) -> None:
    assert _claim(session, "00000000-0000-0000-0000-000000000000") == store.ClaimRefused("missing")
    sid = rows.submission(pid)
    claim = _claim(session, sid)
    assert store.finish(session, claim, _result(pid))
    assert _claim(session, sid) == store.ClaimRefused("final")


def test_finish_writes_done_and_exactly_one_result(
    session: Session, engine: sa.Engine, rows: Rows, pid: str
) -> None:
    sid = rows.submission(pid)
    claim = _claim(session, sid)
    assert store.set_status(session, sid, claim.token, Status.RUNNING)
    assert rows.row(sid)["status"] == "running"
    assert store.finish(session, claim, _result(pid, Verdict.INCORRECT))
    assert not store.finish(session, claim, _result(pid, Verdict.CORRECT)), "a second finish must be refused"
    row = rows.row(sid)
    assert (row["status"], row["verdict"], row["lease_expires_at"]) == ("done", "incorrect", None)
    assert rows.result_count(sid) == 1


def test_a_reclaimed_submission_fences_out_the_old_owner(
    session: Session, engine: sa.Engine, rows: Rows, pid: str
) -> None:
    sid = rows.submission(pid)
    old = _claim(session, sid, worker="dead:0")
    assert _claim(session, sid, worker="new:0") == store.ClaimRefused("active")  # lease still valid
    _expire_lease(engine, sid)
    new = _claim(session, sid, worker="new:0")
    assert isinstance(new, store.Claim) and new.token == old.token + 1
    # The presumed-dead worker wakes up: every write it attempts is refused.
    assert not store.renew_lease(session, sid, old.token, 60)
    assert not store.set_status(session, sid, old.token, Status.RUNNING)
    assert not store.finish(session, old, _result(pid, Verdict.INCORRECT))
    assert store.finish(session, new, _result(pid, Verdict.CORRECT))
    row = rows.row(sid)
    assert (row["verdict"], row["attempts"], row["worker"]) == ("correct", 2, "new:0")
    assert rows.result_count(sid) == 1


def test_retry_release_then_error_after_last_attempt(
    session: Session, engine: sa.Engine, rows: Rows, pid: str
) -> None:
    sid = rows.submission(pid)
    claim = _claim(session, sid, max_attempts=2)
    assert store.release_for_retry(session, sid, claim.token, message="boom", retry_in_s=0, grace_s=30)
    assert rows.row(sid)["status"] == "queued"
    claim2 = _claim(session, sid, max_attempts=2)
    assert isinstance(claim2, store.Claim) and claim2.token == 2
    assert store.fail(session, sid, claim2.token, message="kjudge failed twice: boom")
    row = rows.row(sid)
    assert (row["status"], row["message"], row["verdict"]) == ("error", "kjudge failed twice: boom", None)
    assert rows.result_count(sid) == 0


def test_claim_gives_up_when_out_of_attempts(
    session: Session, engine: sa.Engine, rows: Rows, pid: str
) -> None:
    sid = rows.submission(pid, attempts=3)
    assert _claim(session, sid, max_attempts=3) == store.ClaimRefused("exhausted")
    row = rows.row(sid)
    assert row["status"] == "error" and "gave up after 3 attempts" in row["message"]


def test_reconcile_requeues_overdue_rows_once_and_backs_off(
    session: Session, engine: sa.Engine, rows: Rows, pid: str
) -> None:
    old = store.utcnow() - timedelta(seconds=100)
    overdue = rows.submission(pid, created_at=old)
    fresh = rows.submission(pid)
    report = store.reconcile(session, queued_grace_s=10, max_attempts=3)
    assert report.requeued == [(overdue, "eval.cpu")]
    # The next deadline doubles with age (100 s old → not before another 100 s).
    lease = rows.row(overdue)["lease_expires_at"]
    assert timedelta(seconds=95) < lease - store.utcnow() <= timedelta(seconds=101)
    # A second pass right away (another worker's reconciler) sends nothing again.
    assert store.reconcile(session, queued_grace_s=10, max_attempts=3).requeued == []
    assert rows.row(fresh)["lease_expires_at"] is None


def test_reconcile_recovers_expired_leases_and_gives_up(
    session: Session, engine: sa.Engine, rows: Rows, pid: str
) -> None:
    lost = rows.submission(pid)
    _claim(session, lost)
    doomed = rows.submission(pid, attempts=2)
    _claim(session, doomed)  # attempt 3 of 3
    alive = rows.submission(pid)
    _claim(session, alive)
    _expire_lease(engine, lost)
    _expire_lease(engine, doomed)
    report = store.reconcile(session, queued_grace_s=10, max_attempts=3)
    assert report.requeued == [(lost, "eval.cpu")]
    assert report.gave_up == [doomed]
    assert rows.row(lost)["status"] == "queued"
    assert rows.row(doomed)["status"] == "error"
    assert rows.row(alive)["status"] == "compiling"
    again = _claim(session, lost)
    assert isinstance(again, store.Claim) and again.token == 2


def test_heartbeat_upserts_the_worker_row(session: Session, engine: sa.Engine) -> None:
    store.heartbeat(session, "host:0", queues=["eval.cuda.sm_90", "eval.cuda"], target={"backend": "cuda"})
    store.set_worker_status(session, "host:0", "busy")
    store.heartbeat(
        session, "host:0", queues=["eval.cuda.sm_90"], target={"backend": "cuda", "arch": "sm_90"}
    )
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT id, queue, status, target FROM workers")).all()
    assert len(rows) == 1
    assert rows[0][:3] == ("host:0", "eval.cuda.sm_90", "busy")
    assert rows[0][3]["arch"] == "sm_90"
