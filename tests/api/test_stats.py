"""The dashboard's JSON: /v1/stats aggregates, the new list filters, the long-poll cap header,
and the page's static assets. Rows are written directly, as a worker would write them."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from api import stats
from core.settings import Settings
from db.models import Problem, ResultRow, Submission, WorkerRow, new_id
from tests.api.conftest import RELU_ID, submission

OTHER_SOURCE = "import torch\n# another problem\n"
OTHER_ID = hashlib.sha256(OTHER_SOURCE.encode()).hexdigest()


def _add(
    db: Any,
    *,
    problem_id: str = RELU_ID,
    verdict: str | None = "correct",
    speedup: float | None = 1.0,
    model: str | None = "m1",
    run_id: str | None = "r1",
    status: str | None = None,
    queue: str = "eval.cpu",
    worker: str | None = None,
    finished_at: datetime | None = None,
    reused_from: str | None = None,
    language: str = "cpp",
    target: str = "cpu",
) -> str:
    sid = new_id()
    now = datetime.now(UTC)
    status = status or ("done" if verdict else "queued")
    db.add(
        Submission(
            id=sid,
            problem_id=problem_id,
            language=language,
            source="s",
            source_sha256="0" * 64,
            target=target,
            queue=queue,
            meta={"model": model, "run_id": run_id},
            model=model,
            run_id=run_id,
            status=status,
            verdict=verdict,
            worker=worker,
            created_at=now,
            started_at=now if status != "queued" else None,
            finished_at=finished_at or (now if verdict else None),
            reused_from=reused_from,
        )
    )
    db.flush()
    if verdict:
        db.add(ResultRow(submission_id=sid, result={"problem_id": problem_id}, speedup_vs_eager=speedup))
    db.commit()
    return sid


@pytest.fixture
def other_problem(db: Any) -> str:
    db.add(
        Problem(id=OTHER_ID, name="other", source=OTHER_SOURCE, level=1, tags=[], settings={}, roofline={})
    )
    db.commit()
    return OTHER_ID


def test_fast_p_curve_counts_problems_by_their_best_correct_speedup() -> None:
    best = [(True, 2.5), (True, 0.8), (False, None), (True, None)]
    curve = {round(p.p, 2): p.fraction for p in stats.fast_p_curve(best, 4)}
    assert curve[0.0] == 0.75  # fast_0: solved, whatever the speedup (also unknown)
    assert curve[0.5] == 0.5  # 2.5 and 0.8
    assert curve[1.0] == 0.25  # only 2.5
    assert curve[2.5] == 0.0  # strictly greater than p
    assert curve[4.0] == 0.0
    assert len(curve) == 81
    assert all(p.fraction == 0.0 for p in stats.fast_p_curve([], 0))


def test_run_stats_fast_p_over_attempted_problems(client: Any, db: Any, other_problem: str) -> None:
    # relu: one incorrect, one correct at 1.6x, one correct at 3x -> best 3x
    _add(db, verdict="incorrect", speedup=None)
    _add(db, verdict="correct", speedup=1.6)
    _add(db, verdict="correct", speedup=3.0)
    # other problem: compile error only -> attempted, not solved
    _add(db, problem_id=other_problem, verdict="compile_error", speedup=None)
    # pending in the same run: not attempted yet; another run: ignored
    _add(db, problem_id=other_problem, verdict=None)
    _add(db, verdict="correct", speedup=9.0, run_id="r2", model="m2")

    r = client.get("/v1/stats/runs", params={"run_id": "r1"}).json()
    assert r["submissions"] == 5
    assert (r["finished"], r["pending"], r["correct"]) == (4, 1, 2)
    assert r["correctness_rate"] == 0.5
    assert (r["problems"], r["problems_solved"]) == (2, 1)
    assert r["verdicts"] == {"incorrect": 1, "correct": 2, "compile_error": 1}
    curve = {round(p["p"], 2): p["fraction"] for p in r["fast_p"]}
    assert curve[0.0] == 0.5 and curve[2.95] == 0.5 and curve[3.0] == 0.0

    by_model = client.get("/v1/stats/runs", params={"model": "m2"}).json()
    assert by_model["problems_solved"] == 1 and by_model["fast_p"][-1]["fraction"] == 1.0
    assert client.get("/v1/stats/runs").status_code == 400


def test_problem_stats_histogram_of_correct_speedups(client: Any, db: Any) -> None:
    donor = _add(db, speedup=0.3)
    _add(db, speedup=1.05)
    _add(db, speedup=1.05, reused_from=donor)  # a reused result is not a second measurement
    _add(db, speedup=12.0)
    _add(db, verdict="incorrect", speedup=None)
    r = client.get(f"/v1/stats/problems/{RELU_ID}").json()
    assert r["problem_name"] == "relu"
    assert r["submissions"] == 5 and r["correct"] == 4
    assert r["verdicts"] == {"correct": 4, "incorrect": 1}
    assert r["best_speedup"] == 12.0
    counts = {(b["lo"], b["hi"]): b["count"] for b in r["speedup_bins"]}
    assert counts[(0.25, 0.5)] == 1
    assert counts[(1.0, 1.1)] == 1
    assert counts[(8.0, None)] == 1
    assert sum(counts.values()) == 3
    assert client.get("/v1/stats/problems/nope").status_code == 404


def test_operations_queues_workers_and_rate(client: Any, db: Any) -> None:
    now = datetime.now(UTC)
    db.add(
        WorkerRow(
            id="host:0",
            queue="eval.cpu",
            target={"backend": "cpu", "arch": "x86_64", "device": "CPU"},
            last_seen=now - timedelta(seconds=30),
            status="busy",
        )
    )
    db.commit()
    _add(db, verdict=None, queue="eval.cpu")
    _add(db, verdict=None, queue="eval.cpu")
    _add(db, verdict=None, queue="eval.cuda.sm_90")
    job = _add(db, verdict=None, status="running", queue="eval.cpu", worker="host:0")
    _add(db, finished_at=now - timedelta(minutes=3))
    _add(db, finished_at=now - timedelta(minutes=3))
    _add(db, finished_at=now - timedelta(minutes=90))  # outside the hour

    r = client.get("/v1/stats/operations").json()
    assert {q["queue"]: (q["queued"], q["running"]) for q in r["queues"]} == {
        "eval.cpu": (2, 1),
        "eval.cuda.sm_90": (1, 0),
    }
    (w,) = r["workers"]
    assert (w["id"], w["device"], w["current_job"], w["current_status"]) == ("host:0", "CPU", job, "running")
    assert 29 <= w["heartbeat_age_s"] < 120
    rate = r["evaluations_per_minute"]
    assert len(rate) == 60 and sum(p["count"] for p in rate) == 2
    assert max(rate, key=lambda p: p["count"])["count"] == 2


def test_facets_and_list_filters(client: Any, db: Any) -> None:
    _add(db, model="m-old", run_id="r-old", language="cpp", target="cpu")
    _add(db, model="m-new", run_id="r-new", language="triton", target="cuda")
    f = client.get("/v1/stats/facets").json()
    assert f["models"] == ["m-new", "m-old"]
    assert f["run_ids"] == ["r-new", "r-old"]
    assert f["targets"] == ["cpu", "cuda"]
    assert {"cpp", "triton", "cuda"} <= set(f["languages"])
    assert [p["name"] for p in f["problems"]] == ["relu"]
    items = client.get("/v1/submissions", params={"language": "triton"}).json()["items"]
    assert [i["metadata"]["model"] for i in items] == ["m-new"]
    items = client.get("/v1/submissions", params={"target": "cpu"}).json()["items"]
    assert [i["metadata"]["model"] for i in items] == ["m-old"]


def test_long_poll_cap_is_said_in_a_header_and_in_the_openapi(
    pg_url: str, redis_url: str, tmp_path: Path, db: Any, key: str
) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from tests.api.conftest import LOOPBACK, make_settings

    settings: Settings = make_settings(pg_url, redis_url, tmp_path, long_poll_max_s=0.5)
    app = create_app(settings, startup=False)
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {key}"}) as c:
        sid = c.post("/v1/submissions", json=submission()).json()["id"]
        capped = c.get(f"/v1/submissions/{sid}?wait=5")
        assert capped.json()["status"] == "queued"
        assert capped.headers["Kjudge-Wait-Capped"] == "0.5"
        within = c.get(f"/v1/submissions/{sid}?wait=0.2")
        assert "Kjudge-Wait-Capped" not in within.headers  # asked for less than the cap
        op = c.get("/openapi.json").json()["paths"]["/v1/submissions/{submission_id}"]["get"]
        wait_doc = next(p for p in op["parameters"] if p["name"] == "wait")["description"]
        assert "60 s" in wait_doc and "Kjudge-Wait-Capped" in wait_doc
        assert "Kjudge-Wait-Capped" in op["responses"]["200"]["headers"]


def test_dashboard_page_and_vendored_assets_are_served(client: Any) -> None:
    page = client.get("/").text
    for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', page):
        r = client.get(asset)
        assert r.status_code == 200 and len(r.content) > 100, asset
    assert "/static/vendor/chart.umd.min.js" in page


def test_dashboard_explains_every_integrity_flag() -> None:
    from evaluator.integrity import MESSAGES

    js = (Path(__file__).resolve().parents[2] / "api" / "static" / "dashboard.js").read_text()
    table = js[js.index("const FLAG_TEXT") : js.index("};", js.index("const FLAG_TEXT"))]
    missing = [flag for flag in MESSAGES if f"  {flag}:" not in table]
    assert not missing, f"dashboard.js FLAG_TEXT lacks {missing}"


def test_run_stats_stay_fast_with_many_submissions(settings: Settings, db: Any) -> None:
    """20,000 finished submissions over 200 problems: every aggregate in well under a second
    (the dashboard's budget; bench numbers for 100,000 are in the report)."""
    problems = [
        {
            "id": f"{i:064x}",
            "name": f"p{i}",
            "source": "",
            "level": 1,
            "tags": [],
            "settings": {},
            "roofline": {},
        }
        for i in range(1, 201)
    ]
    db.execute(sa.insert(Problem), problems)
    now = datetime.now(UTC)
    subs, results = [], []
    for i in range(20_000):
        sid = new_id()
        verdict = "correct" if i % 3 else "incorrect"
        subs.append(
            {
                "id": sid,
                "problem_id": problems[i % 200]["id"],
                "language": "cpp",
                "source": "s",
                "source_sha256": "0" * 64,
                "target": "cpu",
                "queue": "eval.cpu",
                "meta": {},
                "model": f"m{i % 4}",
                "run_id": f"r{i % 4}",
                "status": "done",
                "verdict": verdict,
                "created_at": now - timedelta(seconds=i),
                "finished_at": now - timedelta(seconds=i),
                "updated_at": now,
            }
        )
        results.append({"submission_id": sid, "result": {}, "speedup_vs_eager": (i % 50) / 10})
    db.execute(sa.insert(Submission), subs)
    db.execute(sa.insert(ResultRow), results)
    db.commit()
    db.execute(sa.text("ANALYZE"))
    import time

    for call in (
        lambda: stats.run_stats(db, model=None, run_id="r1"),
        lambda: stats.problem_stats(db, problems[7]["id"]),
        lambda: stats.operations(db),
        lambda: stats.facets(db),
    ):
        start = time.perf_counter()
        call()
        assert time.perf_counter() - start < 1.0
    r = stats.run_stats(db, model=None, run_id="r1")
    assert r.submissions == 5000 and r.problems == 50
