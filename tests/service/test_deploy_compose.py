"""docker-compose.yml is accepted by Compose and wires the services the way the code expects."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _compose() -> list[str]:
    """Compose v2 (`docker compose`) when installed, else the v1 `docker-compose`."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if os.environ.get("CI"):  # .ci/run installs Debian's docker-compose
        pytest.fail("neither `docker compose` nor `docker-compose` is installed (.ci/run installs it)")
    pytest.skip("neither `docker compose` nor `docker-compose` is installed")


def _config(*args: str) -> str:
    run = subprocess.run(
        [*_compose(), "-f", str(REPO / "docker-compose.yml"), *args, "config"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_compose_config_accepts_the_file() -> None:
    yaml = pytest.importorskip("yaml")
    services = yaml.safe_load(_config())["services"]
    assert {"postgres", "redis", "api", "worker"} <= set(services)
    for name in ("api", "worker"):
        env = services[name]["environment"]
        assert env["KJUDGE_DATABASE_URL"].startswith("postgresql+psycopg://kjudge:"), name
        assert env["KJUDGE_DATABASE_URL"].endswith("@postgres:5432/kjudge"), name
        assert env["KJUDGE_BROKER_URL"] == "redis://redis:6379/0", name
    # Reachable beyond loopback, so the API requires keys; the worker starts one process per GPU.
    assert str(services["api"]["environment"]["KJUDGE_API_KEYS_REQUIRED"]).lower() == "true"
    assert services["worker"]["command"] == ["kjudge", "worker", "--gpus", "all"]
    assert "api" in services["worker"]["depends_on"]  # the API migrates the schema first


def test_rocm_worker_is_an_opt_in_profile() -> None:
    out = _config("--profile", "rocm")
    assert "\n  worker-rocm:" in out and "/dev/kfd" in out


def test_dockerfiles_exist_and_install_the_package() -> None:
    for name in ("Dockerfile.api", "Dockerfile.worker-cuda", "Dockerfile.worker-rocm"):
        text = (REPO / "docker" / name).read_text()
        assert "pip install" in text and "COPY worker ./worker" in text, name
        assert "COPY core ./core" in text, name  # settings and queues, below api/ and worker/
        assert "bubblewrap" in text, name  # the sandbox is not optional


def test_monitoring_profile_runs_prometheus_and_grafana_on_the_apis_metrics() -> None:
    yaml = pytest.importorskip("yaml")
    services = yaml.safe_load(_config("--profile", "monitoring"))["services"]
    assert {"prometheus", "grafana"} <= set(services)
    # Opt-in (Compose v1's `config` lists every service whatever the profile, so read the tag).
    assert services["prometheus"]["profiles"] == services["grafana"]["profiles"] == ["monitoring"]
    for name in ("prometheus", "grafana"):
        for volume in services[name]["volumes"]:
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            if source.startswith(("/", ".")):
                assert Path(source).exists(), f"{name} mounts {source}, which does not exist"
    prometheus = yaml.safe_load((REPO / "docker" / "prometheus.yml").read_text())
    (job,) = prometheus["scrape_configs"]
    assert job["static_configs"][0]["targets"] == ["api:8000"] and job["metrics_path"] == "/metrics"


def _exported_metric_names() -> set[str]:
    """Every metric family name kjudge's API defines (string literals in its metrics modules)."""
    names: set[str] = set()
    for module in ("metrics.py", "cluster_metrics.py"):
        names |= set(re.findall(r'"(kjudge_[a-z_]+)"', (REPO / "api" / module).read_text()))
    return names


def _referenced(expr: str) -> set[str]:
    found = set()
    for name in re.findall(r"kjudge_[a-z_]+", expr):
        for suffix in ("_bucket", "_count", "_sum", "_total"):
            if name.endswith(suffix) and name[: -len(suffix)] in _exported_metric_names():
                name = name[: -len(suffix)]
                break
        found.add(name)
    return found


def test_dashboard_and_alerts_use_only_metrics_kjudge_exports() -> None:
    yaml = pytest.importorskip("yaml")
    exported = _exported_metric_names()
    assert {"kjudge_queue_depth", "kjudge_evaluations", "kjudge_stage_seconds"} <= exported
    dashboard = json.loads((REPO / "docker" / "grafana" / "dashboards" / "kjudge.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    rules = yaml.safe_load((REPO / "docker" / "kjudge-alerts.yml").read_text())["groups"][0]["rules"]
    exprs += [r["expr"] for r in rules]
    used = set().union(*(_referenced(e) for e in exprs))
    assert used - exported == set(), f"not exported by kjudge: {sorted(used - exported)}"
    for series in ("kjudge_queue_depth", "kjudge_worker_heartbeat_age_seconds", "kjudge_stage_seconds"):
        assert series in used, f"the dashboard/alerts should show {series}"
    assert all(r["alert"].startswith("Kjudge") and r["annotations"]["summary"] for r in rules)
