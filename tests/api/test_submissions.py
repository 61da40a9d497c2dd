"""POST/GET /v1/submissions: store-then-enqueue, idempotency, reuse, long-poll, listing."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from db.models import ResultRow, Submission
from tests.api.conftest import RELU_ID, queued_ids, submission


def _finish(db, sid: str, verdict: str = "correct", speedup: float | None = 1.5, median: float = 0.2) -> None:
    """Writes what a worker writes when it finishes (no worker runs in these tests)."""
    now = datetime.now(UTC)
    db.execute(
        sa.update(Submission)
        .where(Submission.id == sid)
        .values(
            status="done", verdict=verdict, started_at=now, finished_at=now, worker="test:cpu", attempts=1
        )
    )
    result = {
        "id": sid,
        "problem_id": RELU_ID,
        "status": "done",
        "verdict": verdict,
        "compiled": True,
        "correct": verdict == "correct",
        "timing": {
            "median_ms": median,
            "mean_ms": median,
            "std_ms": 0.0,
            "min_ms": median,
            "n": 10,
            "l2_flushed": False,
        },
        "speedup": {"vs_eager": speedup},
        "flags": [],
        "metadata": {},
    }
    db.add(ResultRow(submission_id=sid, result=result, speedup_vs_eager=speedup, median_ms=median))
    db.commit()


def test_submit_stores_row_then_enqueues_its_id(client, db, rds):
    r = client.post(
        "/v1/submissions", json=submission(metadata={"model": "m1", "run_id": "r1", "rollout_id": 7})
    )
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["status"] == "queued" and body["replayed"] is False
    row = db.get(Submission, body["id"])
    assert row is not None and row.status == "queued" and row.queue == "eval.cpu"
    assert (row.model, row.run_id, row.meta["rollout_id"]) == ("m1", "r1", 7)
    assert row.api_key_id is not None
    assert queued_ids(rds) == [body["id"]]

    got = client.get(f"/v1/submissions/{body['id']}").json()
    assert got["status"] == "queued" and got["problem_id"] == RELU_ID and got["source"] is None
    assert (
        client.get(f"/v1/submissions/{body['id']}?include_source=true").json()["source"]
        == submission()["source"]
    )


def test_problem_may_be_named_and_target_defaults_to_any(client, rds):
    r = client.post("/v1/submissions", json=submission(problem_id="relu", target=None))
    assert r.status_code == 202, r.text
    got = client.get(f"/v1/submissions/{r.json()['id']}").json()
    assert (got["problem_id"], got["target"], got["queue"]) == (RELU_ID, "any", "eval.any")
    assert queued_ids(rds, "eval.any") == [r.json()["id"]]


def test_idempotent_retry_returns_the_same_submission(client, db, rds):
    headers = {"Idempotency-Key": "rollout-42"}
    first = client.post("/v1/submissions", json=submission(), headers=headers)
    second = client.post("/v1/submissions", json=submission(), headers=headers)
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]
    assert second.json()["replayed"] is True and second.headers["Idempotent-Replayed"] == "true"
    assert db.scalar(sa.select(sa.func.count()).select_from(Submission)) == 1
    assert queued_ids(rds) == [first.json()["id"]]  # enqueued once

    clash = client.post(
        "/v1/submissions", json=submission(source="// other\n" + submission()["source"]), headers=headers
    )
    assert clash.status_code == 409 and clash.json()["error"]["code"] == "idempotency_key_reused"


def test_idempotency_keys_are_scoped_per_api_key(client, app, db):
    from fastapi.testclient import TestClient

    from tests.api.conftest import LOOPBACK, new_key

    other = new_key(db, name="other")
    a = client.post("/v1/submissions", json=submission(), headers={"Idempotency-Key": "k"}).json()["id"]
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {other}"}) as c2:
        b = c2.post("/v1/submissions", json=submission(), headers={"Idempotency-Key": "k"}).json()["id"]
    assert a != b


def test_reuse_returns_the_stored_result_without_enqueueing(client, db, rds):
    first = client.post("/v1/submissions", json=submission()).json()["id"]
    no_donor = client.post("/v1/submissions", json=submission(reuse=True)).json()
    assert no_donor["status"] == "queued"  # nothing finished yet: evaluated normally
    _finish(db, first, speedup=2.5)
    rds.flushdb()

    reused = client.post("/v1/submissions", json=submission(reuse=True, metadata={"rollout_id": 9}))
    assert reused.status_code == 202
    body = reused.json()
    assert body["status"] == "done" and body["verdict"] == "correct" and body["reused_from"] == first
    assert body["id"] != first
    assert queued_ids(rds) == []
    got = client.get(f"/v1/submissions/{body['id']}").json()
    assert got["result"]["id"] == body["id"] and got["result"]["metadata"] == {"rollout_id": 9}
    assert got["speedup_vs_eager"] == 2.5 and got["result"]["reused_from"] == first
    # A different target is not identical: it runs.
    other = client.post("/v1/submissions", json=submission(reuse=True, target="sm_90")).json()
    assert other["status"] == "queued" and other["reused_from"] is None


def test_long_poll_returns_when_done(client, db):
    sid = client.post("/v1/submissions", json=submission()).json()["id"]
    timer = threading.Timer(0.6, _finish, args=(db, sid))
    timer.start()
    t0 = time.monotonic()
    got = client.get(f"/v1/submissions/{sid}?wait=10").json()
    elapsed = time.monotonic() - t0
    timer.join()
    assert got["status"] == "done" and got["result"]["verdict"] == "correct"
    assert 0.5 < elapsed < 3.0


def test_long_poll_gives_up_after_wait_seconds(client):
    sid = client.post("/v1/submissions", json=submission()).json()["id"]
    t0 = time.monotonic()
    got = client.get(f"/v1/submissions/{sid}?wait=0.8").json()
    assert got["status"] == "queued"
    assert 0.7 < time.monotonic() - t0 < 2.5


def test_unknown_submission_is_404(client):
    r = client.get("/v1/submissions/does-not-exist?wait=1")
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_submission"


def test_listing_pages_are_stable_and_complete(client, db):
    ids = [
        client.post("/v1/submissions", json=submission(metadata={"model": f"m{i % 2}"})).json()["id"]
        for i in range(23)
    ]
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 5} | ({"cursor": cursor} if cursor else {})
        page = client.get("/v1/submissions", params=params).json()
        seen += [s["id"] for s in page["items"]]
        pages += 1
        if pages == 2:  # new submissions arriving mid-listing must not shift later pages
            client.post("/v1/submissions", json=submission())
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert pages == 5
    assert seen == list(reversed(ids))  # newest first, no duplicates, nothing missing
    assert client.get("/v1/submissions", params={"cursor": "garbage!"}).status_code == 400


def test_listing_filters(client, db):
    a = client.post("/v1/submissions", json=submission(metadata={"model": "alpha", "run_id": "r1"})).json()[
        "id"
    ]
    b = client.post("/v1/submissions", json=submission(metadata={"model": "beta", "run_id": "r1"})).json()[
        "id"
    ]
    c = client.post("/v1/submissions", json=submission(metadata={"model": "beta", "run_id": "r2"})).json()[
        "id"
    ]
    _finish(db, b, verdict="incorrect", speedup=None)

    def ids(**params):
        return {s["id"] for s in client.get("/v1/submissions", params=params).json()["items"]}

    assert ids(model="beta") == {b, c}
    assert ids(run_id="r1") == {a, b}
    assert ids(verdict="incorrect") == {b}
    assert ids(status="queued") == {a, c}
    assert ids(problem_id=RELU_ID) == {a, b, c}
    assert ids(problem_id="0" * 64) == set()
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    assert ids(since=future) == set()
    assert ids(since=past, until=future) == {a, b, c}
    item = client.get("/v1/submissions", params={"verdict": "incorrect", "include_result": "true"}).json()[
        "items"
    ][0]
    assert item["result"]["verdict"] == "incorrect"


def test_profile_flag_is_stored_returned_and_kept_apart_by_reuse(client, db, rds):
    plain = client.post("/v1/submissions", json=submission()).json()["id"]
    asked = client.post("/v1/submissions", json=submission(profile=True))
    assert asked.status_code == 202
    profiled = asked.json()["id"]
    assert client.get(f"/v1/submissions/{profiled}").json()["profile"] is True
    assert client.get(f"/v1/submissions/{plain}").json()["profile"] is False
    assert db.scalar(sa.select(Submission.profile).where(Submission.id == profiled)) is True
    # A finished result without a profile cannot answer a request for one.
    _finish(db, plain)
    rds.flushdb()
    again = client.post("/v1/submissions", json=submission(profile=True, reuse=True)).json()
    assert again["status"] == "queued" and again["reused_from"] is None
    assert queued_ids(rds) == [again["id"]]
    _finish(db, profiled)
    reused = client.post("/v1/submissions", json=submission(profile=True, reuse=True)).json()
    assert reused["status"] == "done" and reused["reused_from"] == profiled
    # The same Idempotency-Key with and without a profile is two different requests.
    headers = {"Idempotency-Key": "profile-key"}
    assert client.post("/v1/submissions", json=submission(), headers=headers).status_code == 202
    clash = client.post("/v1/submissions", json=submission(profile=True), headers=headers)
    assert clash.status_code == 409
