"""Dashboard bench: the page's JSON endpoints with N submissions in PostgreSQL.

    python bench/dashboard_load.py [--rows 100000] [--problems 250] [--keep URL_FILE]

Creates a fresh PostgreSQL database (127.0.0.1:5432, trust auth, as .ci/run starts it), fills it
with N synthetic finished submissions (4 models x 2 runs, verdicts and speedups drawn from a
fixed seed, a result row each), ANALYZEs it, then times every request the dashboard makes
through the real app (in-process ASGI, so the numbers are the API's, not the network's): the
first page of the list, a filtered page, facets, a problem's stats, a run's fast_p, operations.
Writes bench/results/dashboard_load.json (host, date, commit, per-endpoint median/p95 ms).
`--keep FILE` keeps the database and writes its URL to FILE (for screenshots), else it is dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.provenance import commit  # noqa: E402

ADMIN_URL = os.environ.get(
    "KJUDGE_TEST_PG_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
MODELS = ("model-a", "model-b", "model-c", "model-d")
VERDICTS = ("correct", "incorrect", "compile_error", "runtime_error", "timeout", "rejected")


def populate(url: str, rows: int, problems: int, seed: int = 0) -> None:
    from db.models import Problem, ResultRow, Submission, WorkerRow

    rng = random.Random(seed)
    engine = sa.create_engine(url)
    now = datetime.now(UTC)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(Problem),
            [
                {"id": f"{i:064x}", "name": f"level1_{i:03d}", "source": "", "level": 1 + i % 3, "tags": [],
                 "settings": {}, "roofline": {}, "builtin": False, "created_at": now}
                for i in range(1, problems + 1)
            ],
        )  # fmt: skip
        conn.execute(
            sa.insert(WorkerRow),
            [
                {"id": f"gpu-node-{n}:{g}", "queue": "eval.cuda.sm_90",
                 "target": {"backend": "cuda", "arch": "sm_90", "device": "NVIDIA H100 80GB HBM3"},
                 "last_seen": now - timedelta(seconds=rng.uniform(0, 12)), "status": "busy"}
                for n in range(2) for g in range(4)
            ],
        )  # fmt: skip
        chunk = 10_000
        for start in range(0, rows, chunk):
            subs, results = [], []
            for i in range(start, min(rows, start + chunk)):
                model = MODELS[i % len(MODELS)]
                skill = 0.35 + 0.12 * (i % len(MODELS))  # later models solve more
                verdict = "correct" if rng.random() < skill else rng.choice(VERDICTS[1:])
                speedup = (
                    rng.lognormvariate(-0.1 + 0.15 * (i % len(MODELS)), 0.6) if verdict == "correct" else None
                )
                created = now - timedelta(seconds=(rows - i) * 2)
                sid = str(uuid.UUID(int=rng.getrandbits(128)))
                pending = i >= rows - 40  # the newest few are still in the queues
                subs.append(
                    {"id": sid, "problem_id": f"{1 + rng.randrange(problems):064x}", "language": "cuda",
                     "source": "// synthetic", "source_sha256": "0" * 64, "target": "sm_90",
                     "queue": "eval.cuda.sm_90", "meta": {"model": model, "run_id": f"{model}-run{(i // 4) % 2}"},
                     "model": model, "run_id": f"{model}-run{(i // 4) % 2}",
                     "status": ("queued" if i % 5 else "running") if pending else "done",
                     "verdict": None if pending else verdict, "attempts": 1,
                     "created_at": created, "started_at": created, "updated_at": created,
                     "finished_at": None if pending else created + timedelta(seconds=20)}
                )  # fmt: skip
                if not pending:
                    results.append({"submission_id": sid, "result": {"verdict": verdict}, "speedup_vs_eager": speedup,
                                    "median_ms": 0.5 / speedup if speedup else None, "created_at": created})  # fmt: skip
            conn.execute(sa.insert(Submission), subs)
            conn.execute(sa.insert(ResultRow), results)
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").execute(sa.text("ANALYZE"))
    engine.dispose()


def time_endpoints(url: str, repeats: int) -> dict[str, dict[str, float]]:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from core.settings import Settings

    app = create_app(Settings(database_url=url, broker_url="memory://"), startup=False)
    paths = {
        "list_first_page": "/v1/submissions?limit=50",
        "list_filtered": f"/v1/submissions?limit=50&model={MODELS[1]}&verdict=correct",
        "facets": "/v1/stats/facets",
        "problem_stats": f"/v1/stats/problems/{7:064x}",
        "leaderboard_problem": f"/v1/leaderboard?problem_id={7:064x}",
        "run_fast_p": f"/v1/stats/runs?run_id={MODELS[2]}-run1",
        "model_fast_p": f"/v1/stats/runs?model={MODELS[3]}",
        "operations": "/v1/stats/operations",
    }
    out = {}
    with TestClient(app, client=("127.0.0.1", 50000)) as client:
        for name, path in paths.items():
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                r = client.get(path)
                times.append((time.perf_counter() - start) * 1000)
                assert r.status_code == 200, (path, r.text[:300])
            times.sort()
            out[name] = {
                "median_ms": round(statistics.median(times), 2),
                "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
            }
            print(f"{name:22} median {out[name]['median_ms']:8.2f} ms  p95 {out[name]['p95_ms']:8.2f} ms")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--problems", type=int, default=250)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="keep the database; write its URL to this file")
    parser.add_argument("--no-write", action="store_true", help="do not write bench/results")
    args = parser.parse_args()

    from core.settings import Settings
    from db.migrate import upgrade

    admin = sa.create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    name = f"kjudge_dashboard_bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        upgrade(Settings(database_url=url))
        start = time.perf_counter()
        populate(url, args.rows, args.problems)
        print(f"populated {args.rows} submissions in {time.perf_counter() - start:.1f} s")
        endpoints = time_endpoints(url, args.repeats)
    finally:
        from db.session import _engine_for

        _engine_for.cache_clear()
        if args.keep:
            args.keep.write_text(url)
        else:
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    result = {
        "bench": "dashboard_load",
        "device": f"{platform.node()} ({os.cpu_count()} CPUs), PostgreSQL on 127.0.0.1",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        # Other work on the host slows the queries: say how busy it was.
        "load_average_1m": round(os.getloadavg()[0], 2),
        "rows": args.rows,
        "problems": args.problems,
        "repeats": args.repeats,
        "headline": {
            "max_median_ms": max(v["median_ms"] for v in endpoints.values()),
            "max_p95_ms": max(v["p95_ms"] for v in endpoints.values()),
        },
        "endpoints": endpoints,
    }
    if not args.no_write:
        path = REPO / "bench" / "results" / "dashboard_load.json"
        path.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
