"""API load bench: N concurrent clients POSTing submissions on loopback against PostgreSQL + Redis.

    python bench/api_load.py [--rate 200] [--seconds 20] [--clients 32] [--api-workers 2]

Starts the API (uvicorn, --api-workers processes) on a fresh PostgreSQL database and a private
Redis db number, drives an open-loop schedule (request i is due at t0 + i/rate; latency counts
from when it was due, so a stalled server cannot hide queueing), then times 1,000-item batches.
No Celery worker runs: this measures accept-and-enqueue, the API's own job. Prints throughput
and latency quantiles, and writes bench/results/api_load.json (host, date, commit, results).
Everything stays on 127.0.0.1 and is bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.provenance import commit  # noqa: E402

PROBLEM_SOURCE = (
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
    "        return torch.relu(x)\n\n\ndef get_inputs():\n    return [torch.randn(4096)]\n\n\n"
    "def get_init_inputs():\n    return []\n"
)
KERNEL = (
    "#include <torch/extension.h>\n// candidate {i}\n"
    "torch::Tensor forward(torch::Tensor x) {{ return x.clamp_min(0); }}\n"
)

# Written before measuring (see notes in the JSON).
PREDICTION = {
    "p50_ms": 10.0,
    "p99_ms": 45.0,
    "batch_1000_s": 1.0,
    "reasoning": "2026-12-01, one thread hop per POST instead of four and no Redis round trip for "
    "the rate limit: ~4.8 ms of API CPU per POST (measured at 100/s, one worker) -> 200/s uses "
    "~1.0 of the 2 cores, PostgreSQL + Redis ~0.3, the load generator ~0.1: ~70% busy. With the "
    "pools warmed before the first request and a warm-up reported apart, p99 is steady-state "
    "queueing: a few service times. Previous prediction (3-4 ms per POST, p99 35 ms) was wrong "
    "by the framework's share; measured then: 6.5 ms, p99 528 ms.",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))
    return ordered[idx]


def _host() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "hostname": socket.gethostname(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
    }


def prepare_database(admin_url: str) -> tuple[str, str, str]:
    """A fresh migrated database with one problem and one key; returns (url, db name, secret)."""
    from api.auth import create_key
    from core.settings import Settings
    from db.migrate import upgrade
    from db.models import Problem
    from db.session import make_engine

    name = f"kjudge_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    upgrade(Settings(database_url=url))
    engine = make_engine(url, pool_size=1, max_overflow=0)
    with sa.orm.Session(engine) as session:
        pid = hashlib.sha256(PROBLEM_SOURCE.encode()).hexdigest()
        session.add(
            Problem(id=pid, name="relu", source=PROBLEM_SOURCE, level=1, tags=[], settings={}, roofline={})
        )
        _, secret = create_key(session, "bench", ["submit", "read"], rate_limit_per_min=10_000_000)
        session.commit()
    engine.dispose()
    return url, name, secret


def drop_database(admin_url: str, name: str) -> None:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def start_api(db_url: str, broker_url: str, port: int, workers: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")}
    env.update(
        KJUDGE_DATABASE_URL=db_url,
        KJUDGE_BROKER_URL=broker_url,
        KJUDGE_API_KEYS_REQUIRED="true",
        # No worker drains the queue here, so backpressure (api/backpressure.py) would refuse the
        # load being measured; a limit it never reaches keeps its check (and cost) on the path.
        KJUDGE_MAX_QUEUE_DEPTH="100000000",
        PYTHONPATH=str(REPO),
    )
    argv = [sys.executable, "-m", "uvicorn", "api.app:create_app", "--factory", "--host", "127.0.0.1",
            "--port", str(port), "--workers", str(workers), "--no-access-log", "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, cwd=REPO)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError("the API exited during start")
        time.sleep(0.2)
    proc.terminate()
    raise RuntimeError("the API did not become ready in 60 s")


def _tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its children (the uvicorn workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return total


def _body(i: int, problem: str) -> dict[str, Any]:
    return {
        "problem_id": problem,
        "language": "cpp",
        "source": KERNEL.format(i=i),
        "target": "cpu",
        "metadata": {"model": "bench", "run_id": "load", "rollout_id": i},
    }


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams, for loopback load only.

    httpx costs ~3 ms of CPU per request here; on a 2-core machine the load generator would
    then take as much CPU as the server it measures. This one costs a fraction of that.
    """

    def __init__(self, base: str, headers: dict[str, str], timeout: float = 30) -> None:
        url = httpx.URL(base)
        self.host, self.port = url.host, url.port or 80
        self.headers = headers
        self.timeout = timeout
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        lines = [
            f"{method} {path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            f"Content-Length: {len(body)}",
        ]
        if body:
            lines.append("Content-Type: application/json")
        lines += [f"{k}: {v}" for k, v in {**self.headers, **(headers or {})}.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), self.timeout)
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        await self.reader.readexactly(length)
        return status

    async def get(self, path: str) -> int:
        return await self.request("GET", path)

    async def post(self, path: str, json: Any, headers: dict[str, str] | None = None) -> int:
        import json as _json

        return await self.request("POST", path, _json.dumps(json).encode(), headers)

    async def aclose(self) -> None:
        if self.writer is not None:
            self.writer.close()


class HttpxClient:
    def __init__(self, base: str, headers: dict[str, str]) -> None:
        self.c = httpx.AsyncClient(
            base_url=base, headers=headers, timeout=30, limits=httpx.Limits(max_connections=1)
        )

    async def get(self, path: str) -> int:
        return (await self.c.get(path)).status_code

    async def post(self, path: str, json: Any, headers: dict[str, str] | None = None) -> int:
        return (await self.c.post(path, json=json, headers=headers)).status_code

    async def aclose(self) -> None:
        await self.c.aclose()


async def open_loop(
    base: str, key: str, rate: float, seconds: float, clients: int, kind: str = "raw"
) -> dict[str, Any]:
    """Request i is due at t0 + i/rate and goes out on the next free client connection."""
    headers = {"Authorization": f"Bearer {key}"}
    pool: asyncio.Queue[Any] = asyncio.Queue()
    factory = RawClient if kind == "raw" else HttpxClient
    conns = [factory(base, headers) for _ in range(clients)]
    for c in conns:
        pool.put_nowait(c)
    total = int(rate * seconds)
    latencies: list[float] = []
    statuses: dict[int, int] = {}

    async def one(i: int, due: float) -> None:
        client = await pool.get()
        try:
            code = await client.post(
                "/v1/submissions",
                json=_body(i, "relu"),
                headers={"Idempotency-Key": f"bench-{i}-{uuid.uuid4().hex}"},
            )
            statuses[code] = statuses.get(code, 0) + 1
        except (TimeoutError, httpx.HTTPError, OSError, asyncio.IncompleteReadError):
            statuses[0] = statuses.get(0, 0) + 1
        finally:
            latencies.append(time.perf_counter() - due)
            pool.put_nowait(client)

    # Warm-up: open every connection, fill the servers' pools.
    await asyncio.gather(*[c.get("/healthz") for c in conns])
    tasks = []
    t0 = time.perf_counter() + 0.05
    for i in range(total):
        due = t0 + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, due)))
    await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    for c in conns:
        await c.aclose()
    ms = [x * 1000 for x in latencies]
    return {
        "target_rate_per_s": rate,
        "requests": total,
        "clients": clients,
        "client_kind": kind,
        "wall_s": round(wall, 3),
        "throughput_per_s": round(total / wall, 1),
        "status_counts": {str(k): v for k, v in sorted(statuses.items())},
        "latency_ms": {
            "p50": round(_quantile(ms, 0.50), 2),
            "p90": round(_quantile(ms, 0.90), 2),
            "p99": round(_quantile(ms, 0.99), 2),
            "max": round(max(ms), 2),
            "mean": round(statistics.fmean(ms), 2),
        },
    }


def batch_times(base: str, key: str, repeats: int) -> list[float]:
    out = []
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        for r in range(repeats):
            items = [_body(100_000 * (r + 1) + i, "relu") for i in range(1000)]
            t0 = time.perf_counter()
            resp = client.post("/v1/batches", json={"submissions": items})
            elapsed = time.perf_counter() - t0
            if resp.status_code != 202 or resp.json()["count"] != 1000:
                raise RuntimeError(f"batch failed: {resp.status_code} {resp.text[:300]}")
            out.append(round(elapsed, 3))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=200.0, help="submissions per second (default 200)")
    ap.add_argument("--seconds", type=float, default=20.0, help="duration of the load phase (default 20)")
    ap.add_argument("--clients", type=int, default=32, help="concurrent client connections (default 32)")
    ap.add_argument(
        "--client", choices=("raw", "httpx"), default="raw", help="load generator's HTTP client (default raw)"
    )
    ap.add_argument(
        "--warmup-seconds",
        type=float,
        default=3.0,
        help="same load before measuring, reported apart (default 3)",
    )
    ap.add_argument("--api-workers", type=int, default=2, help="uvicorn worker processes (default 2)")
    ap.add_argument("--batches", type=int, default=3, help="1,000-item batches to time (default 3)")
    ap.add_argument(
        "--pg-admin-url",
        default=os.environ.get(
            "KJUDGE_TEST_PG_ADMIN_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
        ),
    )
    ap.add_argument(
        "--redis-url", default="redis://127.0.0.1:6379/14", help="a Redis db this bench may flush"
    )
    ap.add_argument(
        "--out", default=str(REPO / "bench" / "results" / "api_load.json"), help="'' to skip writing"
    )
    args = ap.parse_args()
    if args.seconds * args.rate > 20_000:
        ap.error("keep --seconds x --rate at most 20,000 requests")

    import redis

    rds = redis.Redis.from_url(args.redis_url)
    rds.flushdb()
    db_url, db_name, key = prepare_database(args.pg_admin_url)
    port = _free_port()
    api = start_api(db_url, args.redis_url, port, args.api_workers)
    base = f"http://127.0.0.1:{port}"
    try:
        # A running service's steady state, not its first second: the same schedule for a few
        # seconds first (reported apart, under "warmup"; the API also warms its pools at start).
        warmup = (
            asyncio.run(open_loop(base, key, args.rate, args.warmup_seconds, args.clients, args.client))
            if args.warmup_seconds > 0
            else None
        )
        queued_before = rds.llen("eval.cpu")
        cpu0, own0, load0 = _tree_cpu_s(api.pid), time.process_time(), os.getloadavg()[0]
        load = asyncio.run(open_loop(base, key, args.rate, args.seconds, args.clients, args.client))
        load["api_cpu_ms_per_request"] = round((_tree_cpu_s(api.pid) - cpu0) * 1000 / load["requests"], 2)
        load["client_cpu_ms_per_request"] = round((time.process_time() - own0) * 1000 / load["requests"], 2)
        load["host_loadavg_1m_before_after"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
        enqueued = rds.llen("eval.cpu") - queued_before
        batches = batch_times(base, key, args.batches)
    finally:
        api.terminate()
        try:
            api.wait(20)
        except subprocess.TimeoutExpired:
            api.kill()
        rds.flushdb()
        drop_database(args.pg_admin_url, db_name)

    accepted = load["status_counts"].get("202", 0)
    lat = load["latency_ms"]
    report = {
        "bench": "api_load",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "host": _host(),
        "setup": {
            "api": f"uvicorn api.app:create_app, {args.api_workers} worker processes, loopback",
            "database": "PostgreSQL 127.0.0.1 (fresh database)",
            "broker": "Redis 127.0.0.1 (no Celery worker consuming)",
            "request": "POST /v1/submissions, cpp source ~100 B, Idempotency-Key, API key auth + rate limit",
            "latency": "from the time each request was due (open loop), client side, milliseconds",
        },
        "warmup": warmup and {k: warmup[k] for k in ("requests", "status_counts", "latency_ms")},
        "load": {**load, "enqueued_messages": enqueued, "accepted": accepted},
        "batch_1000_s": {"runs": batches, "median": statistics.median(batches)},
        "targets": {"p99_ms_at_200_per_s": 50.0, "batch_1000_s": 2.0},
        "met": {
            "p99": lat["p99"] <= 50.0 and load["throughput_per_s"] >= 0.95 * args.rate,
            "batch": statistics.median(batches) <= 2.0,
        },
        "prediction": PREDICTION,
    }
    print(
        f"load: {load['requests']} POSTs at {args.rate:.0f}/s target, {load['throughput_per_s']}/s achieved, "
        f"{accepted} accepted, {enqueued} enqueued; latency p50 {lat['p50']} ms, p90 {lat['p90']} ms, "
        f"p99 {lat['p99']} ms, max {lat['max']} ms; CPU per request: API {load['api_cpu_ms_per_request']} ms, "
        f"load generator {load['client_cpu_ms_per_request']} ms; "
        f"load average {load['host_loadavg_1m_before_after']}"
    )
    print(f"batch of 1,000: {batches} s (median {statistics.median(batches)} s)")
    print(f"targets met: {report['met']}")
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
