"""The per-GPU launcher's plan: which processes, pinned how, consuming which queues."""

from __future__ import annotations

import pytest

from worker.devices import Gpu
from worker.launcher import (
    LaunchError,
    celery_argv,
    cpu_spec,
    embedded_spec,
    gpu_spec,
    parse_gpu_selection,
)

H100S = [
    Gpu(index=0, visible_id="2", backend="cuda", arch="sm_90", name="NVIDIA H100 80GB HBM3"),
    Gpu(index=1, visible_id="3", backend="cuda", arch="sm_90", name="NVIDIA H100 80GB HBM3"),
]
MI300 = [Gpu(index=0, visible_id="0", backend="rocm", arch="gfx942", name="AMD Instinct MI300X")]


def test_gpu_selection() -> None:
    assert parse_gpu_selection("all", H100S) == H100S
    assert parse_gpu_selection("1", H100S) == [H100S[1]]
    assert parse_gpu_selection("0, 1", H100S) == H100S
    with pytest.raises(LaunchError, match=r"GPU '7' does not exist \(visible GPUs: 0, 1\)"):
        parse_gpu_selection("0,7", H100S)
    with pytest.raises(LaunchError, match="no GPU is visible"):
        parse_gpu_selection("all", [])
    with pytest.raises(LaunchError, match="needs 'all' or a list"):
        parse_gpu_selection(",", H100S)


def test_each_gpu_process_is_pinned_to_its_own_device() -> None:
    base = {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "2,3", "KJUDGE_WORKER_GPU": "stale"}
    envs = [gpu_spec(g).child_env(base) for g in H100S]
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["2", "3"]  # physical ids, one each
    assert [e["KJUDGE_WORKER_GPU"] for e in envs] == ["2", "3"]
    assert envs[0]["KJUDGE_WORKER_QUEUES"] == "eval.cuda.sm_90,eval.cuda,eval.any"
    assert envs[0]["KJUDGE_WORKER_BACKEND"] == "cuda" and envs[0]["KJUDGE_WORKER_ARCH"] == "sm_90"
    rocm = gpu_spec(MI300[0]).child_env({})
    assert rocm["ROCR_VISIBLE_DEVICES"] == "0" and "CUDA_VISIBLE_DEVICES" not in rocm
    assert "HIP_VISIBLE_DEVICES" not in rocm
    assert rocm["KJUDGE_WORKER_QUEUES"] == "eval.hip.gfx942,eval.rocm,eval.any"


def test_a_pinned_rocm_worker_sees_its_gpu_as_device_0() -> None:
    """ROCR_VISIBLE_DEVICES picks the GPU; HIP_/CUDA_VISIBLE_DEVICES index inside its list, so
    leaving them at the same non-zero index (or the operator's list) would leave no GPU."""
    mi300s = [
        Gpu(index=i, visible_id=str(i + 4), backend="rocm", arch="gfx942", name="AMD Instinct MI300X")
        for i in range(2)
    ]
    base = {"PATH": "/usr/bin", "HIP_VISIBLE_DEVICES": "4,5", "CUDA_VISIBLE_DEVICES": "4,5"}
    envs = [gpu_spec(g).child_env(base) for g in mi300s]
    assert [e["ROCR_VISIBLE_DEVICES"] for e in envs] == ["4", "5"]
    for env in envs:
        assert "HIP_VISIBLE_DEVICES" not in env and "CUDA_VISIBLE_DEVICES" not in env
    assert [e["KJUDGE_WORKER_GPU"] for e in envs] == ["4", "5"]
    assert [gpu_spec(g).name for g in mi300s] == ["gpu4", "gpu5"]


def test_cpu_worker_sees_no_gpu() -> None:
    env = cpu_spec().child_env({"CUDA_VISIBLE_DEVICES": "0", "KJUDGE_WORKER_GPU": "0"})
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["HIP_VISIBLE_DEVICES"] == ""
    assert "KJUDGE_WORKER_GPU" not in env
    assert "eval.any" not in env["KJUDGE_WORKER_QUEUES"]
    assert "eval.any" in cpu_spec(take_any=True).queues


def test_embedded_worker_serves_everything_its_device_can() -> None:
    on_gpu = embedded_spec(H100S)
    assert on_gpu.gpu == H100S[0]
    assert {"eval.cuda.sm_90", "eval.cuda", "eval.any", "eval.cpu"} <= set(on_gpu.queues)
    no_gpu = embedded_spec([])
    assert no_gpu.backend == "cpu" and {"eval.cpu", "eval.any"} <= set(no_gpu.queues)


def test_celery_argv_pins_concurrency_and_prefetch() -> None:
    argv = celery_argv(gpu_spec(H100S[1]))
    joined = " ".join(argv)
    assert "-A worker.celery_app worker" in joined
    assert "--concurrency 1" in joined and "--prefetch-multiplier 1" in joined
    assert "--queues eval.cuda.sm_90,eval.cuda,eval.any" in joined
    assert "--hostname kjudge-gpu3@" in joined


@pytest.mark.gpu
def test_real_gpus_are_listed_and_pinned_one_per_process() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU visible")
    from worker.devices import list_gpus

    gpus = list_gpus()
    assert len(gpus) == torch.cuda.device_count()
    specs = [gpu_spec(g) for g in parse_gpu_selection("all", gpus)]
    for gpu, spec in zip(gpus, specs, strict=True):
        expected = "rocm" if torch.version.hip else "cuda"
        assert gpu.backend == expected and spec.queues[-1] == "eval.any"
        if expected == "cuda":
            major, minor = torch.cuda.get_device_capability(gpu.index)
            assert gpu.arch == f"sm_{major}{minor}" and spec.queues[0] == f"eval.cuda.sm_{major}{minor}"
        env = spec.child_env({})
        assert env["CUDA_VISIBLE_DEVICES" if expected == "cuda" else "ROCR_VISIBLE_DEVICES"] == gpu.visible_id


def test_kjudge_worker_explains_a_missing_gpu() -> None:
    import subprocess
    import sys

    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    run = subprocess.run(
        [sys.executable, "-m", "kjudge", "worker", "--gpus", "0"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 2
    assert "GPU '0' does not exist (visible GPUs: none)" in run.stderr and "Traceback" not in run.stderr
