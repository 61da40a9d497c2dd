"""Two worker "hosts" in network namespaces this test creates, sharing one PostgreSQL and one
Redis: work spreads over both; one host's link is cut mid-evaluation, its lease expires and the
other host runs the job exactly once; the link comes back and the host takes work again.

Everything stays on addresses the test makes: a veth pair per namespace (10.213.N.0/30) and a
private PostgreSQL and Redis listening on loopback and the veths' host ends (bench/
private_services.py), so cutting a link disturbs no one else. Needs root (ip netns).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("celery")
import sqlalchemy as sa  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from bench.private_services import PrivatePostgres, PrivateRedis, kill_group  # noqa: E402
from core.settings import Settings  # noqa: E402

from .conftest import DATA, REPO, wait_for  # noqa: E402

pytestmark = pytest.mark.slow

PROBLEM = (DATA / "relu_problem.py").read_text()
CORRECT = (DATA / "relu_triton.py").read_text()
SLOW = (DATA / "relu_triton_slow.py").read_text()
# Short deadlines so the cut is noticed in seconds; the mechanism is the production one.
LEASE_ENV = {
    "KJUDGE_RUNNING_LEASE_S": "8",
    "KJUDGE_LEASE_RENEW_S": "2",
    "KJUDGE_QUEUED_GRACE_S": "20",
    "KJUDGE_WORKER_RECONCILE_INTERVAL_S": "2",
    "KJUDGE_WORKER_HEARTBEAT_INTERVAL_S": "2",
}


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


class NetnsHost:
    """A network namespace joined to the root namespace by a veth pair."""

    def __init__(self, name: str, index: int, subnet: int) -> None:
        self.name = name
        self.ns = f"kj{os.getpid() % 100000}{name[-1]}"
        self.root_if = f"{self.ns}r"
        self.ns_if = f"{self.ns}n"
        self.root_addr = f"10.213.{subnet}.{4 * index + 1}"
        self.ns_addr = f"10.213.{subnet}.{4 * index + 2}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    def create(self) -> None:
        _ip("netns", "add", self.ns)
        _ip("link", "add", self.root_if, "type", "veth", "peer", "name", self.ns_if)
        _ip("link", "set", self.ns_if, "netns", self.ns)
        _ip("addr", "add", f"{self.root_addr}/30", "dev", self.root_if)
        _ip("link", "set", self.root_if, "up")
        _ip("-n", self.ns, "addr", "add", f"{self.ns_addr}/30", "dev", self.ns_if)
        _ip("-n", self.ns, "link", "set", self.ns_if, "up")
        _ip("-n", self.ns, "link", "set", "lo", "up")

    def cut(self) -> None:
        _ip("link", "set", self.root_if, "down")

    def restore(self) -> None:
        _ip("link", "set", self.root_if, "up")

    def start_worker(self, env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.ns,
                    sys.executable,
                    "-m",
                    "kjudge",
                    "worker",
                    "--cpu",
                    "--take-any",
                    # One process per host, as this test's lease and link checks were written
                    # for; the pipelined layout's kills are tests/service/test_worker_pipeline.py's.
                    "--serial",
                ],
                env={**env, "KJUDGE_WORKER_HOST": self.name},
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path else ""

    def destroy(self) -> None:
        if self.proc is not None:
            kill_group(self.proc)
        for args in (("link", "del", self.root_if), ("netns", "del", self.ns)):
            with contextlib.suppress(subprocess.SubprocessError):
                _ip(*args)


@pytest.fixture()
def cluster(tmp_path: Path, kjudge_home: Path) -> Iterator[dict[str, Any]]:
    if os.geteuid() != 0 or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("the multi-host tests need root and `ip netns`")
        pytest.skip("needs root and `ip netns`")
    subnet = os.getpid() % 200 + 20
    hosts = [NetnsHost("hostA", 0, subnet), NetnsHost("hostB", 1, subnet)]
    pg = redis = None
    try:
        for h in hosts:
            h.create()
        pg = PrivatePostgres(tmp_path, listen=tuple(h.root_addr for h in hosts))
        pg.init()
        redis = PrivateRedis(tmp_path, bind=tuple(h.root_addr for h in hosts))
        redis.start()
        from db.migrate import upgrade

        settings = Settings(
            database_url=pg.url,
            broker_url=redis.url,
            home=kjudge_home,
            running_lease_s=float(LEASE_ENV["KJUDGE_RUNNING_LEASE_S"]),
            lease_renew_s=float(LEASE_ENV["KJUDGE_LEASE_RENEW_S"]),
            queued_grace_s=float(LEASE_ENV["KJUDGE_QUEUED_GRACE_S"]),
        )
        upgrade(settings)
        base = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")}
        for h in hosts:
            env = {
                **base,
                **LEASE_ENV,
                # A cut link must fail a database call in seconds, not TCP's ~15 minutes.
                "KJUDGE_DATABASE_URL": pg.url_at(h.root_addr, tcp_user_timeout="5000"),
                "KJUDGE_BROKER_URL": redis.url_at(h.root_addr),
                "KJUDGE_HOME": str(kjudge_home),
                "PYTHONPATH": str(REPO),
            }
            h.start_worker(env, tmp_path / f"{h.name}.log")
        yield {"hosts": {h.name: h for h in hosts}, "settings": settings, "pg": pg}
    finally:
        for h in hosts:
            h.destroy()
        if redis is not None:
            redis.stop()
        if pg is not None:
            pg.stop()


def _rows(engine: sa.Engine, ids: list[str]) -> dict[str, dict[str, Any]]:
    with engine.connect() as conn:
        got = conn.execute(
            sa.text(
                "SELECT s.id, s.status, s.verdict, s.attempts, s.worker, count(r.submission_id) AS results "
                "FROM submissions s LEFT JOIN results r ON r.submission_id = s.id "
                "WHERE s.id = ANY(:ids) GROUP BY s.id"
            ),
            {"ids": ids},
        ).mappings()
        return {r["id"]: dict(r) for r in got}


def _evaluated_by(
    api: TestClient, engine: sa.Engine, ids: list[str], timeout_s: float, log
) -> dict[str, str]:
    wait_for(
        lambda: all(r["status"] == "done" for r in _rows(engine, ids).values()), timeout_s, "verdicts", log
    )
    rows = _rows(engine, ids)
    assert all(r["results"] == 1 and r["verdict"] == "correct" for r in rows.values()), rows
    return {sid: r["worker"] for sid, r in rows.items()}


@pytest.mark.timeout(900)
def test_cut_link_job_moves_to_the_other_host_exactly_once_and_the_host_rejoins(cluster) -> None:
    from api.app import create_app

    hosts: dict[str, NetnsHost] = cluster["hosts"]
    engine = sa.create_engine(cluster["pg"].url)
    logs = lambda: "\n".join(f"--- {n}\n{h.log_tail()}" for n, h in hosts.items())  # noqa: E731

    with TestClient(create_app(cluster["settings"], startup=False), client=("127.0.0.1", 50000)) as api:
        problem_id = api.post("/v1/problems", json={"name": "relu_small", "source": PROBLEM}).json()["id"]

        def submit(source: str, n: int = 1) -> list[str]:
            body = {"problem_id": problem_id, "language": "triton", "source": source, "target": "cpu"}
            return [api.post("/v1/submissions", json=body).json()["id"] for _ in range(n)]

        wait_for(
            lambda: len(api.get("/v1/workers").json()["workers"]) == 2, 120, "both hosts to register", logs
        )
        # Spread: each host takes a slow job (the other is busy), then both take the rest.
        spread = submit(SLOW, 2) + submit(CORRECT, 2)
        by = _evaluated_by(api, engine, spread, 400, logs)
        assert {w.split(":")[0] for w in by.values()} == {"hostA", "hostB"}, by

        (victim_job,) = submit(SLOW)
        row = wait_for(
            lambda: (r := _rows(engine, [victim_job])[victim_job])["status"] == "running" and r,
            180,
            "the run",
            logs,
        )
        victim = hosts[row["worker"].split(":")[0]]
        other = next(h for h in hosts.values() if h is not victim)
        victim.cut()
        cut_at = time.monotonic()
        moved = wait_for(
            lambda: (r := _rows(engine, [victim_job])[victim_job])["attempts"] == 2 and r,
            120,
            "the move",
            logs,
        )
        moved_after_s = time.monotonic() - cut_at
        assert moved["worker"] == f"{other.name}:cpu"
        final = wait_for(
            lambda: (r := _rows(engine, [victim_job])[victim_job])["status"] == "done" and r,
            300,
            "its verdict",
            logs,
        )
        assert (final["verdict"], final["attempts"], final["results"]) == ("correct", 2, 1)

        victim.restore()
        # The host comes back: it heartbeats again and takes new work while the other is busy.
        restored_at = time.time()

        def heartbeating() -> bool:
            listed = {w["id"]: w for w in api.get("/v1/workers").json()["workers"]}
            me = listed[f"{victim.name}:cpu"]
            return me["status"] != "offline" and me["heartbeat_age_s"] < time.time() - restored_at

        wait_for(heartbeating, 120, "the cut host to heartbeat again", logs)
        after = submit(SLOW, 2)
        by = _evaluated_by(api, engine, after, 400, logs)
        assert f"{victim.name}:cpu" in by.values(), by
        # Exactly once, still: the cut host's late result for the moved job was discarded.
        assert _rows(engine, [victim_job])[victim_job]["results"] == 1
    engine.dispose()
    print(f"moved to {other.name} {moved_after_s:.1f} s after the cut")
