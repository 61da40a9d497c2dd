"""Profile mode on a GPU (skipped without one): a correct examples/relu/relu_cuda.cu is profiled
by Nsight Compute (rocprofv3 on ROCm) inside the sandbox, and the Result carries the numbers of
the candidate's own kernel — not the harness's (input generation, the reference, the L2 flush).
Through evaluate() and through `kjudge eval --profile --json`; the API path is in
tests/service/test_profile_api_gpu.py.

If the driver keeps the performance counters to administrators (RmProfilingAdminOnly=1), the
sandboxed profile cannot read them and these tests fail with that message: see docs/internals.md,
Profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.embedded_serve import embedded_env
from evaluator.api import evaluate
from evaluator.options import EvalOptions, Submission, TimingOptions
from evaluator.problem import Problem
from evaluator.profiling.models import Profile
from evaluator.result import Backend, Verdict
from tests.evaluator.conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.gpu

RELU = Problem.from_file(EXAMPLES / "problem.py")
ELEMENTS = 16 * 16384  # examples/relu/problem.py


def _options(home: Path, **kw: object) -> EvalOptions:
    return EvalOptions(
        device="cuda",
        trials=2,
        seed=11,
        timing=TimingOptions(max_time_s=0.3),
        baselines=False,
        cache_dir=home / "cache",
        **kw,  # type: ignore[arg-type]
    )


def _check_relu_profile(profile: Profile | dict, backend: Backend, device: str) -> None:
    profile = Profile.model_validate(profile)
    assert profile.available, f"no profile: {profile.message}"
    assert profile.device == device and profile.calls and profile.calls >= 1
    # Only the candidate's own kernel ran inside the profiled window.
    assert [k.name.split("(")[0].split()[-1] for k in profile.kernels] == ["relu_kernel"], profile.kernels
    (k,) = profile.kernels
    assert k.calls == profile.calls and k.share_of_time == 1.0
    assert k.duration_us is not None and 0 < k.duration_us < 5_000
    assert k.dram_gbps is not None and k.dram_gbps > 0
    assert k.dram_pct_of_peak is not None and 0 < k.dram_pct_of_peak <= 100
    assert k.sm_pct_of_peak is not None and 0 <= k.sm_pct_of_peak <= 100
    assert k.registers_per_thread is not None and k.registers_per_thread > 0
    assert k.shared_mem_per_block_bytes == 0
    assert k.block_size == 256 and k.grid_size == (ELEMENTS + 255) // 256
    assert k.bound in ("memory", "compute", "latency")
    assert profile.bottleneck and profile.bottleneck.startswith(f"{k.bound}-bound: `relu_kernel`")
    if backend is Backend.CUDA:
        assert profile.profiler and profile.profiler.startswith("ncu")
        assert k.achieved_occupancy_pct is not None and 0 < k.achieved_occupancy_pct <= 100
        # 1 MiB read from DRAM (caches flushed before each pass); the 1 MiB written may still sit
        # in L2 (write-back) when the kernel ends, so DRAM sees 1-2 MiB
        assert k.dram_bytes is not None and 0.9 * 2**20 < k.dram_bytes < 3 * 2**20
        assert k.top_stalls and all(0 < s.share <= 1 for s in k.top_stalls)
        assert "selected" not in [s.reason for s in k.top_stalls]


def test_profiled_correct_cuda_kernel_reports_its_own_kernel(kjudge_home: Path, tmp_path: Path) -> None:
    options = _options(kjudge_home, profile=True, keep_scratch=True, scratch_root=tmp_path)
    result = evaluate(RELU, Submission.from_file(EXAMPLES / "relu_cuda.cu"), options)
    assert result.verdict == Verdict.CORRECT, result.model_dump_json(indent=1)
    assert result.timing is not None and result.roofline is not None  # profiling changes neither
    assert result.target is not None and result.profile is not None
    _check_relu_profile(result.profile, result.target.backend, result.target.device)
    assert "profile" in result.durations_s and result.durations_s["profile"] > 0
    # the line places the run on the problem's roofline
    assert "roofline (memory-limited" in (result.profile.bottleneck or "")
    if result.target.backend is Backend.CUDA:
        # ncu's own log, as the parser read it; KJUDGE_RECORD_PROFILE_DIR keeps a copy to commit
        # as a recorded fixture (tests/evaluator/profiling_data/recorded, parsed on CI)
        (log,) = tmp_path.glob("kjudge-eval-*/ncu.csv")
        record = os.environ.get("KJUDGE_RECORD_PROFILE_DIR")
        if record:
            Path(record).mkdir(parents=True, exist_ok=True)
            device = result.target.device.replace(" ", "_")
            (Path(record) / f"ncu_raw_relu_{device}.csv").write_text(log.read_text())


def test_no_profile_unless_asked(kjudge_home: Path) -> None:
    result = evaluate(RELU, Submission.from_file(EXAMPLES / "relu_cuda.cu"), _options(kjudge_home))
    assert result.verdict == Verdict.CORRECT and result.profile is None
    assert "profile" not in result.durations_s


def test_kjudge_eval_profile_json(kjudge_home: Path) -> None:
    env = embedded_env(kjudge_home)
    for name in ("KJUDGE_NCU", "KJUDGE_UNSAFE_NO_SANDBOX"):  # the operator's settings still apply
        if name in os.environ:
            env[name] = os.environ[name]
    run = subprocess.run(
        [
            sys.executable, "-m", "kjudge", "eval",
            "--problem", str(EXAMPLES / "problem.py"), "--kernel", str(EXAMPLES / "relu_cuda.cu"),
            "--device", "cuda", "--no-baselines", "--trials", "2", "--profile", "--json",
        ],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert result["verdict"] == "correct" and result["timing"] is not None
    _check_relu_profile(result["profile"], Backend(result["target"]["backend"]), result["target"]["device"])
