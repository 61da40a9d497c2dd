"""Problems, leaderboard, health, readiness, metrics and the dashboard."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from db.models import BaselineRow, Problem, ResultRow, Submission
from tests.api.conftest import LOOPBACK, RELU_ID, new_key, submission


def _problem(db, name: str, level: int | None, tags: list[str]) -> str:
    source = f"# {name}\n"
    pid = __import__("hashlib").sha256(source.encode()).hexdigest()
    db.add(Problem(id=pid, name=name, source=source, level=level, tags=tags, settings={}, roofline={}))
    db.commit()
    return pid


def test_problem_listing_filters_and_detail(client, db):
    conv = _problem(db, "conv2d", 2, ["conv"])
    db.add(
        BaselineRow(
            problem_id=RELU_ID,
            device="NVIDIA H100 80GB HBM3",
            torch_version="2.11",
            eager_ms=0.8,
            compile_ms=0.5,
        )
    )
    db.commit()
    names = [p["name"] for p in client.get("/v1/problems").json()["items"]]
    assert names == ["relu", "conv2d"]
    assert [p["id"] for p in client.get("/v1/problems?level=2").json()["items"]] == [conv]
    assert [p["name"] for p in client.get("/v1/problems?tag=activation").json()["items"]] == ["relu"]
    detail = client.get(f"/v1/problems/{RELU_ID}").json()
    assert "class Model" in detail["source"]
    assert (
        detail["baselines"][0]["device"] == "NVIDIA H100 80GB HBM3"
        and detail["baselines"][0]["eager_ms"] == 0.8
    )
    assert client.get("/v1/problems/relu").json()["id"] == RELU_ID
    assert client.get("/v1/problems/nope").status_code == 404


def test_post_problem_validates_on_cpu(app, db):
    pytest.importorskip(
        "problems.catalog", reason="problems.catalog (the problem library helper's) not installed"
    )
    writer = new_key(db, ["problems:write", "read"], name="operator")
    source = (
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.tanh(x)\n\ndef get_inputs():\n    return [torch.randn(256)]\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {writer}"}) as c:
        r = c.post("/v1/problems", json={"name": "tanh_custom", "source": source, "tags": ["activation"]})
        assert r.status_code == 201, r.text
        pid = r.json()["id"]
        assert pid == __import__("hashlib").sha256(source.encode()).hexdigest()
        again = c.post("/v1/problems", json={"name": "tanh_custom", "source": source})
        assert again.status_code == 200 and again.json()["id"] == pid
        bad = c.post("/v1/problems", json={"name": "broken", "source": "import torch\nclass Model: pass\n"})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "problem_rejected"


def _done(
    db, model: str, speedup: float | None, verdict: str = "correct", reused_from: str | None = None
) -> str:
    now = datetime.now(UTC)
    sub = Submission(
        problem_id=RELU_ID, language="cpp", source="//", source_sha256="0" * 64, target="cpu", queue="eval.cpu",
        meta={"model": model}, model=model, status="done", verdict=verdict, created_at=now, updated_at=now,
        reused_from=reused_from,
    )  # fmt: skip
    db.add(sub)
    db.flush()
    db.add(
        ResultRow(
            submission_id=sub.id, result={"problem_id": RELU_ID}, speedup_vs_eager=speedup, median_ms=1.0
        )
    )
    db.commit()
    return sub.id


def test_leaderboard_best_correct_per_model(client, db):
    a1 = _done(db, "a", 1.2)
    _done(db, "a", 0.9)
    b1 = _done(db, "b", 3.0)
    _done(db, "b", 9.0, verdict="rejected")  # hacks never rank
    _done(db, "c", 50.0, reused_from=a1)  # a reused result is not a new achievement
    entries = client.get("/v1/leaderboard").json()["entries"]
    assert [(e["rank"], e["model"], e["submission_id"]) for e in entries] == [(1, "b", b1), (2, "a", a1)]
    assert entries[0]["problem_name"] == "relu" and entries[0]["speedup_vs_eager"] == 3.0
    assert client.get("/v1/leaderboard", params={"problem_id": "0" * 64}).json()["entries"] == []


def test_health_ready_metrics_dashboard(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"] == {"database": "ok", "broker": "ok"}
    client.post("/v1/submissions", json=submission())
    metrics = client.get("/metrics").text
    assert 'kjudge_submissions{status="queued"} 1.0' in metrics
    assert 'kjudge_http_requests_total{method="POST",route="/v1/submissions",status="202"}' in metrics
    page = client.get("/")
    assert page.status_code == 200 and "/static/dashboard.js" in page.text
    script = client.get("/static/dashboard.js")
    assert script.status_code == 200 and "/v1/submissions" in script.text
    # a submission's detail shows its profile (profile mode): the bottleneck line and the kernels
    assert "function profileHtml" in script.text and "profile.bottleneck" in script.text
    assert "profile.kernels" in script.text
    spec = client.get("/openapi.json").json()
    for path in ("/v1/submissions", "/v1/submissions/{submission_id}", "/v1/batches", "/v1/batches/{batch_id}",
                 "/v1/problems", "/v1/problems/{problem_ref}", "/v1/leaderboard", "/healthz", "/readyz", "/metrics"):  # fmt: skip
        assert path in spec["paths"], path
    assert client.get("/docs").status_code == 200


def test_builtin_problems_seed_idempotently(db):
    from db.seed import builtin_problem_rows, seed_builtin_problems

    rows = builtin_problem_rows()
    if not rows:
        pytest.skip("problems.catalog not installed")
    first = seed_builtin_problems(db)
    assert first == len({r["id"] for r in rows} - {RELU_ID})
    assert seed_builtin_problems(db) == 0
    assert db.scalar(sa.select(sa.func.count()).select_from(Problem).where(Problem.builtin)) >= first
