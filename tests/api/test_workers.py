"""/v1/workers, drains and the cluster metrics on /metrics, against the rows a worker writes
(worker.registry, worker.store: the same statements a real worker runs)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from evaluator.result import Result, Target, Verdict
from tests.api.conftest import LOOPBACK, new_key, submission
from worker import registry, store


def _register(db, worker_id: str, queues: list[str]) -> None:
    host, gpu = worker_id.rsplit(":", 1)
    target = {"backend": "cpu", "arch": "x86_64", "device": "CPU"}
    if gpu != "cpu":
        target = {"backend": "cuda", "arch": "sm_90", "device": "H100", "gpu": gpu}
    registry.register(db, worker_id, host=host, queues=queues, target=target)


def _metric(text: str, metric: str, **labels: str) -> float | None:
    for line in text.splitlines():
        if not line.startswith(metric + "{") and not line.startswith(metric + " "):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_workers_are_listed_with_their_job_and_drained_by_an_admin(app, db) -> None:
    _register(db, "node1:0", ["eval.cuda.sm_90", "eval.any"])
    _register(db, "node1:cpu", ["eval.cpu"])
    registry.job_started(db, "node1:0", "sub-1")
    reader = new_key(db, ["read"], name="reader")
    admin = new_key(db, ["admin"], name="admin")
    with TestClient(app, client=LOOPBACK, headers={"X-API-Key": reader}) as c:
        listed = {w["id"]: w for w in c.get("/v1/workers").json()["workers"]}
        assert set(listed) == {"node1:0", "node1:cpu"}
        gpu = listed["node1:0"]
        assert (gpu["host"], gpu["gpu"], gpu["status"], gpu["current_job"]) == ("node1", "0", "busy", "sub-1")
        assert gpu["target"] == {"backend": "cuda", "arch": "sm_90", "device": "H100"}
        assert gpu["heartbeat_age_s"] < 5 and gpu["queues"] == ["eval.cuda.sm_90", "eval.any"]
        assert listed["node1:cpu"]["status"] == "idle" and listed["node1:cpu"]["current_job"] is None
        refused = c.post("/v1/workers/node1:0/drain")
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "missing_scope"
    with TestClient(app, client=LOOPBACK, headers={"X-API-Key": admin}) as c:
        assert c.post("/v1/workers/node1:0/drain").json() == {"id": "node1:0", "status": "draining"}
        assert c.post("/v1/workers/nope:0/drain").status_code == 404
    # The worker learns it from its next heartbeat; its job's end leaves it draining, not idle.
    assert registry.beat(db, "node1:0") is True and registry.beat(db, "node1:cpu") is False
    assert registry.beat(db, "never-registered:0") is None  # the worker then registers itself
    registry.job_finished(db, "node1:0", evaluated=True)
    with TestClient(app, client=LOOPBACK, headers={"X-API-Key": reader}) as c:
        gpu = {w["id"]: w for w in c.get("/v1/workers").json()["workers"]}["node1:0"]
    assert (gpu["status"], gpu["evaluations"], gpu["current_job"], gpu["drain"]) == (
        "draining",
        1,
        None,
        True,
    )
    registry.set_status(db, "node1:0", "offline")
    with TestClient(app, client=LOOPBACK, headers={"X-API-Key": admin}) as c:
        assert c.post("/v1/workers/node1:0/drain").status_code == 404, "an offline worker cannot drain"
        online = c.get("/v1/workers", params={"include_offline": "false"}).json()["workers"]
    assert [w["id"] for w in online] == ["node1:cpu"]


def test_metrics_carry_queue_depth_workers_and_new_evaluations(app, db, client) -> None:
    _register(db, "node2:cpu", ["eval.cpu"])
    remove = registry.add_stats_source(lambda: {"compile_pool_busy": 3, "compile_pool_slots": 4})
    try:
        registry.beat(db, "node2:cpu", stats=registry.collect_stats())
    finally:
        remove()
    before = client.get("/metrics").text
    counted = _metric(
        before, "kjudge_evaluations_total", verdict="correct", language="cpp", target="cpu:x86_64"
    )

    queued = client.post("/v1/submissions", json=submission()).json()["id"]
    done = client.post(
        "/v1/submissions", json=submission(source="// another\n" + submission()["source"])
    ).json()["id"]
    claim = store.claim(db, done, worker_id="node2:cpu", lease_s=60, max_attempts=3)
    assert isinstance(claim, store.Claim)
    result = Result(
        problem_id=claim.problem_id,
        verdict=Verdict.CORRECT,
        compiled=True,
        correct=True,
        target=Target(backend="cpu", arch="x86_64", device="CPU"),
        durations_s={"queued": 0.5, "compile": 3.0, "run": 1.5, "timing": 0.4},
    )
    assert store.finish(db, claim, result)

    text = client.get("/metrics").text
    assert _metric(text, "kjudge_queue_depth", queue="eval.cpu") == 1.0, queued
    assert _metric(text, "kjudge_queue_consumers", queue="eval.cpu") == 1.0
    assert (
        _metric(text, "kjudge_evaluations_total", verdict="correct", language="cpp", target="cpu:x86_64")
        == (counted or 0.0) + 1.0
    )
    for stage in ("queue_wait", "compile", "gpu", "timing"):
        assert _metric(text, "kjudge_stage_seconds_count", stage=stage) is not None, stage
    assert _metric(text, "kjudge_stage_seconds_bucket", stage="compile", le="5.0") >= 1.0
    assert _metric(text, "kjudge_worker_up", worker="node2:cpu", host="node2") == 1.0
    assert _metric(text, "kjudge_worker_heartbeat_age_seconds", worker="node2:cpu") < 5
    assert _metric(text, "kjudge_worker_busy_ratio", worker="node2:cpu") is not None
    assert _metric(text, "kjudge_compile_pool_utilisation", host="node2") == 0.75
    assert _metric(text, "kjudge_worker_stat", worker="node2:cpu", name="compile_pool_slots") == 4.0
    # A scrape reads each result once: a second scrape adds nothing.
    again = client.get("/metrics").text
    assert _metric(
        again, "kjudge_evaluations_total", verdict="correct", language="cpp", target="cpu:x86_64"
    ) == (_metric(text, "kjudge_evaluations_total", verdict="correct", language="cpp", target="cpu:x86_64"))
