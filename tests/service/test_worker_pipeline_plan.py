"""The pipelined host's plan (worker/pipeline.py, launcher.pipelined): which cores each stage
gets, how big the compile pool is, which queues each process consumes, for 1 to 8 GPUs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from worker import pipeline
from worker.devices import Gpu
from worker.launcher import cpu_spec, embedded_spec, gpu_spec, pipelined

GIB = 1 << 30


def _gpus(n: int, arch: str = "sm_90") -> list[Gpu]:
    return [Gpu(index=i, visible_id=str(i), backend="cuda", arch=arch, name="NVIDIA H200") for i in range(n)]


def test_one_gpu_on_16_cores_compiles_on_13_and_runs_on_2() -> None:
    plan = pipeline.plan_cpus(range(16), 1, 128 * GIB)
    assert plan.run_cpus == [[14, 15]]
    assert plan.compile_cpus == list(range(14))
    assert plan.compile_pool == 13  # one core of the 14 left to the API and the broker


def test_the_two_core_ci_host_still_overlaps() -> None:
    plan = pipeline.plan_cpus([0, 1], 1, 8 * GIB)
    assert plan.run_cpus == [[1]] and plan.compile_cpus == [0] and plan.compile_pool == 1


def test_memory_bounds_the_pool() -> None:
    assert pipeline.plan_cpus(range(64), 1, 9 * GIB).compile_pool == 4  # 2 GiB a compile


def test_spares_are_bounded_by_memory() -> None:
    # 128 GiB, one GPU: the full count; 8 GiB shared by two GPUs: one each, never none.
    assert pipeline.spares_per_gpu_stage(128 * GIB, 1) == pipeline.SPARES_PER_GPU_STAGE
    assert pipeline.spares_per_gpu_stage(16 * GIB, 1) == 4
    assert pipeline.spares_per_gpu_stage(8 * GIB, 2) == 1
    assert pipeline.spares_per_gpu_stage(0, 8) == 1


def test_eight_gpus_get_disjoint_cores_and_share_the_rest() -> None:
    plan = pipeline.plan_cpus(range(128), 8, 560 * GIB)
    flat = [c for cores in plan.run_cpus for c in cores]
    assert len(plan.run_cpus) == 8 and all(len(c) == 2 for c in plan.run_cpus)
    assert len(set(flat)) == 16 and not set(flat) & set(plan.compile_cpus)
    assert plan.compile_pool == 128 - 16 - 1


def test_more_stages_than_cores_never_take_the_last_compile_core() -> None:
    plan = pipeline.plan_cpus([0, 1, 2], 4, 64 * GIB)
    assert plan.compile_cpus and 0 in plan.compile_cpus
    assert all(cores and 0 not in cores for cores in plan.run_cpus)


def test_override_and_cpu_list_parsing() -> None:
    assert pipeline.plan_cpus(range(16), 1, 128 * GIB, pool_override=3).compile_pool == 3
    assert pipeline.parse_cpus("0-3, 8,8") == [0, 1, 2, 3, 8]
    assert pipeline.format_cpus([1, 2]) == "1,2"


@pytest.fixture()
def sixteen_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "available_cpus", lambda: list(range(16)))
    monkeypatch.setattr(pipeline, "available_memory", lambda: 128 * GIB)
    monkeypatch.setattr("socket.gethostname", lambda: "h1")


@pytest.mark.parametrize("n", [1, 2, 4])
def test_n_gpus_become_n_run_stages_behind_one_compile_pool(sixteen_cores: None, n: int) -> None:
    specs = pipelined([gpu_spec(g) for g in _gpus(n)])
    compile_spec, runs = specs[0], specs[1:]
    assert compile_spec.stage == "compile" and compile_spec.gpu is None and compile_spec.nice > 0
    assert compile_spec.queues == ["eval.cuda.sm_90", "eval.cuda", "eval.any"]
    assert len(runs) == n and all(r.stage == "run" and r.concurrency == 1 for r in runs)
    # Every GPU's stage consumes only this host's run queue of its target, pinned to its device.
    assert {tuple(r.queues) for r in runs} == {("run.h1.cuda.sm_90",)}
    assert [r.child_env({})["CUDA_VISIBLE_DEVICES"] for r in runs] == [str(i) for i in range(n)]
    cores = [set(r.cpus) for r in runs]
    assert all(len(c) == 2 for c in cores) and len(set().union(*cores)) == 2 * n
    assert not set().union(*cores) & set(compile_spec.cpus)
    assert compile_spec.concurrency == 16 - 2 * n - 1
    # Each stage keeps several spare run children, importing on the compile cores, not its own.
    for run in runs:
        env = run.child_env({})
        assert int(env["KJUDGE_WORKER_SPARES"]) == pipeline.spares_per_gpu_stage(128 * GIB, n) > 1
        assert pipeline.parse_cpus(env["KJUDGE_WORKER_SPARE_CPUS"]) == compile_spec.cpus
    targets = pipeline.load_targets(compile_spec.child_env({})["KJUDGE_WORKER_STAGE_TARGETS"])
    assert [(t.backend, t.run_queue, t.visibility) for t in targets] == [
        ("cuda", "run.h1.cuda.sm_90", {"CUDA_VISIBLE_DEVICES": "0"})
    ]


def test_mixed_architectures_get_a_run_queue_each(sixteen_cores: None) -> None:
    gpus = [*_gpus(1), Gpu(index=1, visible_id="1", backend="cuda", arch="sm_100", name="B200")]
    specs = pipelined([gpu_spec(g) for g in gpus])
    targets = pipeline.load_targets(specs[0].child_env({})["KJUDGE_WORKER_STAGE_TARGETS"])
    assert [t.run_queue for t in targets] == ["run.h1.cuda.sm_90", "run.h1.cuda.sm_100"]
    assert pipeline.target_for_queue("eval.cuda.sm_100", targets).arch == "sm_100"
    assert pipeline.target_for_queue("eval.any", targets).arch == "sm_90"
    assert pipeline.target_for_queue("eval.hip.gfx942", targets) is None


def test_the_embedded_worker_runs_cpu_targets_from_their_own_run_queue(sixteen_cores: None) -> None:
    compile_spec, run = pipelined([embedded_spec(_gpus(1))])
    targets = pipeline.load_targets(compile_spec.child_env({})["KJUDGE_WORKER_STAGE_TARGETS"])
    assert [t.backend for t in targets] == ["cuda", "cpu"]
    assert run.queues == ["run.h1.cuda.sm_90", f"run.h1.cpu.{targets[1].arch}"]
    assert pipeline.target_for_queue("eval.cpu", targets).backend == "cpu"
    assert pipeline.target_for_queue("eval.any", targets).backend == "cuda"


def test_a_cpu_host_takes_any_only_when_asked(sixteen_cores: None) -> None:
    compile_spec, run = pipelined([cpu_spec(take_any=True)])
    assert "eval.any" in compile_spec.queues and run.queues[0].startswith("run.h1.cpu.")
    assert "eval.any" not in pipelined([cpu_spec()])[0].queues


def test_placement_is_inherited_by_what_the_process_starts() -> None:
    cores = sorted(os.sched_getaffinity(0))[:1]
    probe = "import os; print(sorted(os.sched_getaffinity(0)), os.nice(0))"
    out = subprocess.run(
        [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {probe!r}])"],
        preexec_fn=lambda: pipeline.apply_placement(cores, 7),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == f"{cores} {os.nice(0) + 7}"
