"""docker/k8s validates against the Kubernetes API schemas (kubernetes-validate, bundled
schemas, strict: unknown fields are errors) and wires what the code expects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

K8S = Path(__file__).resolve().parents[2] / "docker" / "k8s"
# The oldest Kubernetes the manifests promise to work on (appArmorProfile is a 1.30 field).
VERSIONS = ("1.30.0", "1.33.0")


def _documents() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def _by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for _, doc in _documents() if doc["kind"] == kind}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid_for_kubernetes(version: str) -> None:
    docs = _documents()
    assert len(docs) >= 9
    for name, doc in docs:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name}: {doc['kind']} {doc['metadata']['name']}: {exc.message} at {list(exc.path)}")


def test_an_invalid_manifest_is_refused() -> None:
    """The validator is not a rubber stamp: a misspelt field fails."""
    deployment = _by_kind("Deployment")["kjudge-api"]
    broken = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[0], strict=True)


def test_kustomization_lists_every_manifest() -> None:
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_workers_get_one_gpu_each_and_what_the_sandbox_needs() -> None:
    deployments = _by_kind("Deployment")
    for name, resource in (("kjudge-worker-cuda", "nvidia.com/gpu"), ("kjudge-worker-rocm", "amd.com/gpu")):
        pod = deployments[name]["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["resources"]["limits"][resource] == 1, name
        assert container["command"] == ["kjudge", "worker", "--gpus", "all"]
        security = container["securityContext"]
        assert security["seccompProfile"]["type"] == "Unconfined"  # bubblewrap's unshare/mount
        assert security["appArmorProfile"]["type"] == "Unconfined"
        assert not security.get("privileged")
        assert pod["shareProcessNamespace"] is True  # orphan recovery across container restarts
        env = {e["name"] for e in container["env"]}
        assert {"KJUDGE_DATABASE_URL", "KJUDGE_BROKER_URL", "KJUDGE_WORKER_HOST"} <= env


def test_api_is_a_service_and_migrations_a_job() -> None:
    api = _by_kind("Deployment")["kjudge-api"]["spec"]["template"]["spec"]["containers"][0]
    assert "--no-migrate" in api["command"] and api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    service = _by_kind("Service")["kjudge-api"]
    assert service["spec"]["selector"] == {"app.kubernetes.io/name": "kjudge-api"}
    job = _by_kind("Job")["kjudge-migrate"]["spec"]["template"]["spec"]["containers"][0]
    assert job["command"] == ["kjudge", "db", "upgrade"]
    externals = {name: s["spec"]["type"] for name, s in _by_kind("Service").items() if name != "kjudge-api"}
    assert externals == {"postgres": "ExternalName", "redis": "ExternalName"}
