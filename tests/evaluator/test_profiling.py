"""Profile mode without a GPU: the ncu and rocprofv3 parsers on profiler output in their
documented layouts (tests/evaluator/profiling_data/README.md says where it comes from), the
bottleneck line, and the parent's profile_candidate with a stand-in profiler in the sandbox."""

from __future__ import annotations

import os
import stat
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evaluator.options import TimingOptions
from evaluator.problem import ProblemSettings
from evaluator.profiling import ncu, rocprof
from evaluator.profiling.bottleneck import kernel_bound, summarize
from evaluator.profiling.models import KernelProfile
from evaluator.profiling.run import profile_candidate
from evaluator.profiling.units import number, to_bytes, to_bytes_per_s, to_ns
from evaluator.result import Backend, Language, Roofline, Target
from evaluator.runner import RunJob

DATA = Path(__file__).parent / "profiling_data"
EXAMPLES = Path(__file__).parents[2] / "examples" / "relu"
CASES = Path(__file__).parent / "cases"
RELU = "relu_kernel(const float *, float *, long)"
H200 = Target(backend=Backend.CUDA, arch="sm_90", device="NVIDIA H200")


def test_numbers_and_units() -> None:
    assert number("1,234.5") == 1234.5
    assert number("12,884,901,888") == 12884901888
    assert number("3.2e3") == 3200
    for text in ("n/a", "", "(!) n/a", "1,23", "abc", None):
        assert number(text) is None
    assert to_ns(3.2, "usecond") == pytest.approx(3200)
    assert to_ns(2, "msecond") == pytest.approx(2e6)
    assert to_ns(1, "cycle") is None
    assert to_bytes(2, "Kbyte") == 2000 and to_bytes(1, "KiB") == 1024 and to_bytes(1, "register") is None
    assert to_bytes_per_s(4, "Tbyte/second") == 4e12 and to_bytes_per_s(1, "byte/s") == 1


def test_ncu_raw_page_one_kernel() -> None:
    out = ncu.parse((DATA / "ncu_raw_relu_small.csv").read_text())
    assert out.errors == [] and out.launches == 1
    (k,) = out.kernels
    assert k.name == RELU and k.calls == 1 and k.share_of_time == 1.0
    assert k.duration_us == pytest.approx(3.2)
    assert k.dram_bytes == 2_101_248
    assert k.dram_gbps == pytest.approx(656.64)
    assert (k.dram_pct_of_peak, k.sm_pct_of_peak, k.memory_pct_of_peak) == pytest.approx((13.71, 6.12, 14.02))
    assert (k.achieved_occupancy_pct, k.theoretical_occupancy_pct) == pytest.approx((38.45, 100))
    assert (k.registers_per_thread, k.shared_mem_per_block_bytes) == (16, 0)
    assert (k.block_size, k.grid_size) == (256, 1024)
    reasons = [s.reason for s in k.top_stalls]
    # largest first; "selected" is the issuing cycle, not a stall
    assert reasons == ["long_scoreboard", "wait", "drain"]
    total = 9.87 + 1.32 + 0.90 + 0.61 + 0.21 + 0.02 + 0.05 + 0.03
    assert k.top_stalls[0].share == pytest.approx(9.87 / total, abs=1e-3)
    assert kernel_bound(k) == "latency"


def test_ncu_details_page_reads_the_same() -> None:
    raw = ncu.parse((DATA / "ncu_raw_relu_small.csv").read_text()).kernels
    details = ncu.parse((DATA / "ncu_details_relu_small.csv").read_text()).kernels
    assert [k.model_dump() for k in details] == [k.model_dump() for k in raw]


def test_ncu_launches_of_one_kernel_merge_longest_first() -> None:
    out = ncu.parse((DATA / "ncu_raw_relu_large.csv").read_text())
    assert out.launches == 3
    relu, other = out.kernels
    assert relu.name == RELU and relu.calls == 2
    assert relu.duration_us == pytest.approx((3212.416 + 3220.0) / 2)
    # percentages weighted by duration
    expected = (83.56 * 3212.416 + 83.36 * 3220.0) / (3212.416 + 3220.0)
    assert relu.dram_pct_of_peak == pytest.approx(expected)
    assert relu.share_of_time == pytest.approx(6432.416 / (6432.416 + 1100.0), abs=1e-4)
    assert other.name.startswith("void at::native::vectorized_elementwise_kernel") and other.calls == 1
    assert other.shared_mem_per_block_bytes == 3072 and other.block_size == 128
    assert kernel_bound(relu) == "memory"


def test_ncu_permission_error_is_explained() -> None:
    text = (DATA / "ncu_permission_error.log").read_text()
    out = ncu.parse(text)
    assert out.kernels == [] and out.errors
    message = ncu.explain_errors(out.errors, text)
    assert "ERR_NVGPUCTRPERM" in message and "NVreg_RestrictProfilingToAdminUsers=0" in message
    assert ncu.explain_errors(["==ERROR== Failed to prepare kernel for profiling"], "").startswith(
        "ncu failed:"
    )


def test_ncu_command_profiles_only_the_window(tmp_path: Path) -> None:
    argv = ncu.command("/opt/ncu", ["python", "-m", "evaluator.profile_child", "job.json"], tmp_path / "log")
    assert argv[0] == "/opt/ncu" and argv[-4:] == ["python", "-m", "evaluator.profile_child", "job.json"]
    joined = " ".join(argv)
    assert "--profile-from-start off" in joined and "--page raw" in joined and "--csv" in joined
    assert f"--log-file {tmp_path / 'log'}" in joined and "--clock-control none" in joined
    metrics = argv[argv.index("--metrics") + 1].split(",")
    for metric in (ncu.DURATION, ncu.DRAM_PCT, ncu.SM_PCT, ncu.OCCUPANCY, ncu.REGISTERS, ncu.SMEM_STATIC):
        assert metric in metrics
    assert any(m.startswith("regex:smsp__average_warps_issue_stalled_") for m in metrics)


def _executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def test_find_ncu(tmp_path: Path) -> None:
    tool = _executable(tmp_path / "my-ncu")
    assert ncu.find_ncu({"KJUDGE_NCU": str(tool)}) == str(tool)
    plain = tmp_path / "not-executable"
    plain.write_text("")
    assert ncu.find_ncu({"KJUDGE_NCU": str(plain)}) is None
    bindir = tmp_path / "bin"
    bindir.mkdir()
    on_path = _executable(bindir / "ncu")
    assert ncu.find_ncu({"PATH": str(bindir)}) == str(on_path)
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    in_home = _executable(home / "bin" / "ncu")
    assert ncu.find_ncu({"PATH": str(tmp_path / "empty"), "CUDA_HOME": str(home)}) == str(in_home)


def _rocprof_texts() -> tuple[str, str, str]:
    return tuple(  # type: ignore[return-value]
        (DATA / f"rocprof_{name}.csv").read_text()
        for name in ("kernel_trace", "counter_collection", "marker_api_trace")
    )


def test_rocprof_keeps_the_kernels_inside_the_range() -> None:
    trace, counters, markers = _rocprof_texts()
    out = rocprof.parse(
        trace, counters, markers, range_name="kjudge_profile", device_name="AMD Instinct MI300X"
    )
    assert out.window_found and out.launches == 3
    (k,) = out.kernels
    assert k.name == "relu_kernel(float const*, float*, long)" and k.calls == 3
    assert k.duration_us == pytest.approx((4.0 + 4.2 + 3.8) / 3)
    assert k.dram_bytes == 2 * 1024 * 1024
    # bytes per launch over the mean launch (rates are weighted by duration)
    rates = [2 * 1024 * 1024 / d for d in (4000, 4200, 3800)]
    weighted = sum(r * d for r, d in zip(rates, (4.0, 4.2, 3.8), strict=True)) / 12.0
    assert k.dram_gbps == pytest.approx(weighted)
    assert k.dram_pct_of_peak == pytest.approx(weighted / 5300 * 100)  # MI300X: 5.3 TB/s
    assert (k.sm_pct_of_peak, k.memory_pct_of_peak) == pytest.approx((3.5, 11.25))
    assert (k.registers_per_thread, k.shared_mem_per_block_bytes, k.block_size, k.grid_size) == (
        16,
        0,
        256,
        1024,
    )
    assert k.top_stalls == [] and kernel_bound(k) == "latency"


def test_rocprof_without_markers_lists_everything() -> None:
    trace, counters, _ = _rocprof_texts()
    out = rocprof.parse(trace, counters, "", range_name="kjudge_profile", device_name="an unknown GPU")
    assert not out.window_found and out.launches == 8
    relu = next(k for k in out.kernels if k.name.startswith("relu_kernel"))
    assert relu.calls == 5 and relu.dram_pct_of_peak is None  # no datasheet peak for that device
    reduce = next(k for k in out.kernels if "reduce_kernel" in k.name)
    assert reduce.shared_mem_per_block_bytes == 4096 and reduce.grid_size == 1024


def test_rocprof_reads_output_nested_by_host_and_pid(tmp_path: Path) -> None:
    nested = tmp_path / "rocprof" / "host" / "4711"
    nested.mkdir(parents=True)
    for name in ("kernel_trace", "counter_collection", "marker_api_trace"):
        (nested / f"kjudge_{name}.csv").write_text((DATA / f"rocprof_{name}.csv").read_text())
    trace, counters, markers = rocprof.read_output(tmp_path / "rocprof")
    assert trace.startswith('"Kind"') and '"Counter_Name"' in counters and "kjudge_profile" in markers
    argv = rocprof.command("/opt/rocm/bin/rocprofv3", ["python", "x"], tmp_path, ["FETCH_SIZE", "VALUBusy"])
    assert argv[argv.index("--pmc") + 1 : argv.index("--pmc") + 3] == ["FETCH_SIZE", "VALUBusy"]
    assert "--kernel-trace" in argv and "--marker-trace" in argv and argv[-3:] == ["--", "python", "x"]
    assert rocprof.counters({"KJUDGE_ROCPROF_COUNTERS": "SQ_WAVES GRBM_GUI_ACTIVE"}) == [
        "SQ_WAVES",
        "GRBM_GUI_ACTIVE",
    ]


@pytest.mark.parametrize(
    ("dram", "memory", "sm", "bound"),
    [
        (85.0, 85.0, 20.0, "memory"),
        (10.0, 70.0, 30.0, "memory"),  # L1/L2 busy, DRAM not: still memory
        (20.0, 25.0, 90.0, "compute"),
        (13.0, 14.0, 6.0, "latency"),
        (None, None, None, None),
    ],
)
def test_kernel_bound(dram: float | None, memory: float | None, sm: float | None, bound: str | None) -> None:
    k = KernelProfile(name="k", dram_pct_of_peak=dram, memory_pct_of_peak=memory, sm_pct_of_peak=sm)
    assert kernel_bound(k) == bound


def test_bottleneck_line_places_the_kernel_on_the_roofline() -> None:
    kernels = ncu.parse((DATA / "ncu_raw_relu_large.csv").read_text()).kernels
    roofline = Roofline(
        achieved_gbps=3900,
        achieved_tflops=0,
        bound_ms=2.9,
        fraction_of_bound=0.9,
        limiter="memory",
        device="H200",
    )
    line = summarize(kernels, roofline)
    assert line is not None and line.startswith("memory-bound: `relu_kernel`")
    assert "of 2 kernels" in line and "DRAM 4.01 TB/s (83% of peak)" in line and "long_scoreboard" in line
    assert "memory-limited" in line and "90% of the bound" in line and "fewer bytes" in line
    small = summarize(ncu.parse((DATA / "ncu_raw_relu_small.csv").read_text()).kernels, None)
    assert small is not None and small.startswith("latency-bound") and "roofline" not in small
    assert summarize([], roofline) is None


# --- the parent's profile_candidate ---------------------------------------------------------


def _job(tmp_path: Path) -> RunJob:
    (tmp_path / "problem.py").write_text("")
    (tmp_path / "cand.py").write_text("")
    return RunJob(
        problem_path=tmp_path / "problem.py",
        settings=ProblemSettings(),
        language=Language.TRITON,
        candidate_path=tmp_path / "cand.py",
        native_cache_dir=tmp_path / "inline",
        device="cuda",
        target=H200,
        trials=1,
        seed=1,
        timing=TimingOptions(),
        report_path=tmp_path / "report.json",
        phase_path=tmp_path / "phase",
        spawned_at=time.time(),
    )


def _env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(p for p in sys.path if p)}


def test_cpu_target_says_why(tmp_path: Path) -> None:
    cpu = Target(backend=Backend.CPU, arch="x86_64", device="some CPU")
    profile = profile_candidate(_job(tmp_path), cpu, scratch=tmp_path, env=_env(), timeout_s=30)
    assert not profile.available and "cpu target" in (profile.message or "") and profile.kernels == []


def test_missing_profiler_says_how_to_configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KJUDGE_NCU", str(tmp_path / "nowhere" / "ncu"))
    profile = profile_candidate(_job(tmp_path), H200, scratch=tmp_path, env=_env(), timeout_s=30)
    assert not profile.available and "KJUDGE_NCU" in (profile.message or "")
    monkeypatch.setenv("KJUDGE_ROCPROF", str(tmp_path / "nowhere" / "rocprofv3"))
    mi300 = Target(backend=Backend.ROCM, arch="gfx942", device="AMD Instinct MI300X")
    profile = profile_candidate(_job(tmp_path), mi300, scratch=tmp_path, env=_env(), timeout_s=30)
    assert not profile.available and "rocprofv3" in (profile.message or "")


def _fake_ncu(tmp_path: Path, fixture: str, mode: str = "log") -> Path:
    """A stand-in `ncu` that writes a recorded log where --log-file says (no GPU needed; the real
    one would also run the child, which needs a GPU). mode "stdout": prints it instead; mode
    "strict": refuses a metric list with a regex, as an ncu that lacks a metric does."""
    tooldir = tmp_path / "tool"
    tooldir.mkdir(exist_ok=True)
    (tooldir / "log.txt").write_text((DATA / fixture).read_text())
    script = textwrap.dedent(
        f"""\
        #!/bin/sh
        log=""; metrics=""
        while [ $# -gt 0 ]; do
          case "$1" in
            --version) printf 'NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1.0.0 (build 1)\\n'; exit 0 ;;
            --log-file) log="$2"; shift ;;
            --metrics) metrics="$2"; shift ;;
          esac
          shift
        done
        echo "$metrics" >> "$(dirname "$log")/ncu-calls"  # scratch: writable in the sandbox
        case "{mode}" in
          stdout) cat {tooldir / "log.txt"} ;;
          strict)
            case "$metrics" in
              *regex:*) echo "==ERROR== Failed to find metric regex:smsp__average_warps_issue_stalled_" > "$log" ;;
              *) cp {tooldir / "log.txt"} "$log" ;;
            esac ;;
          *) cp {tooldir / "log.txt"} "$log" ;;
        esac
        """
    )
    return _executable(tooldir / "ncu", script)


@pytest.mark.parametrize(
    ("fixture", "mode"),
    [
        ("ncu_raw_relu_small.csv", "log"),
        ("ncu_raw_relu_small.csv", "stdout"),
        ("ncu_raw_relu_small.csv", "strict"),
        ("ncu_permission_error.log", "log"),
    ],
)
def test_profile_candidate_runs_the_profiler_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixture: str, mode: str
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("KJUDGE_NCU", str(_fake_ncu(tmp_path, fixture, mode)))
    profile = profile_candidate(_job(scratch), H200, scratch=scratch, env=_env(), timeout_s=60)
    calls = (scratch / "ncu-calls").read_text().splitlines()
    if "permission" in fixture:
        assert not profile.available and "ERR_NVGPUCTRPERM" in (profile.message or "")
        assert len(calls) == 1  # not a metric problem: no second run
        return
    assert profile.available, profile.message
    assert profile.device == "NVIDIA H200" and profile.calls == 1 and profile.kernels_seen == 1
    assert profile.profiler == "ncu 2099.1.0.0"  # asked of the binary, in the parent
    assert profile.kernels[0].name == RELU and profile.kernels[0].bound == "latency"
    assert profile.bottleneck and profile.bottleneck.startswith("latency-bound")
    assert profile.seconds is not None and profile.seconds >= 0
    assert (scratch / "profile-job.json").exists()
    if mode == "strict":
        assert len(calls) == 2 and "regex:" in calls[0] and calls[1] == ",".join(ncu.CORE_METRICS)
        assert "core metrics only" in (profile.message or "")
    else:
        assert len(calls) == 1 and profile.message is None


def test_a_candidate_that_fails_under_the_profiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's own report (written by the stand-in here) says why; no numbers are shown."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    tool = _fake_ncu(tmp_path, "ncu_permission_error.log")
    report = '{"ok": false, "message": "the profiled run raised RuntimeError: boom"}'
    text = tool.read_text().replace(
        "#!/bin/sh\n", f"#!/bin/sh\necho '{report}' > {scratch / 'profile-report.json'}\n"
    )
    tool.write_text(text)
    monkeypatch.setenv("KJUDGE_NCU", str(tool))
    profile = profile_candidate(_job(scratch), H200, scratch=scratch, env=_env(), timeout_s=60)
    assert not profile.available
    assert (
        profile.message
        == "the candidate failed under the profiler: the profiled run raised RuntimeError: boom"
    )


def test_the_scratch_is_read_without_following_the_candidates_links(tmp_path: Path) -> None:
    from evaluator.profiling.files import read_untrusted, walk_untrusted

    secret = tmp_path / "host-secret.csv"
    secret.write_text('"ID","Kernel Name"\n"==ERROR== password"\n')
    scratch = tmp_path / "scratch"
    (scratch / "rocprof" / "host").mkdir(parents=True)
    (scratch / "ncu.csv").symlink_to(secret)
    os.mkfifo(scratch / "fifo.csv")  # would block a plain open() forever
    (scratch / "big.csv").write_text("x" * 100)
    (scratch / "rocprof" / "host" / "kjudge_kernel_trace.csv").write_text("ok")
    (scratch / "rocprof" / "linked").symlink_to(tmp_path, target_is_directory=True)
    (scratch / "rocprof" / "file_link_kernel_trace.csv").symlink_to(secret)
    assert read_untrusted(scratch / "ncu.csv") == ""
    assert read_untrusted(scratch / "fifo.csv") == ""
    assert read_untrusted(scratch / "missing.csv") == ""
    assert read_untrusted(scratch / "big.csv", cap=10) == "x" * 10
    assert [p.name for p in walk_untrusted(scratch / "rocprof")] == ["kjudge_kernel_trace.csv"]
    assert rocprof.read_output(scratch / "rocprof") == ("ok", "", "")
    (tmp_path / "rocprof-link").symlink_to(scratch / "rocprof", target_is_directory=True)
    assert list(walk_untrusted(tmp_path / "rocprof-link")) == []


# --- the profile child itself, on the CPU (no profiler: it still loads and calls the candidate) --


def _child_job(tmp_path: Path, candidate: Path) -> Path:
    import shutil

    from evaluator.profile_child import ProfileJob
    from evaluator.targets.cpu import cpu_target

    run = _job(tmp_path).model_copy(
        update={"language": Language.KERNELBENCH, "device": "cpu", "target": cpu_target()}
    )
    shutil.copyfile(EXAMPLES / "problem.py", run.problem_path)
    shutil.copyfile(candidate, run.candidate_path)
    job = ProfileJob(run=run, calls=2, report_path=tmp_path / "profile-report.json")
    path = tmp_path / "profile-job.json"
    path.write_text(job.model_dump_json())
    return path


@pytest.mark.parametrize(("case", "ok"), [("kb_relu.py", True), ("kb_raises.py", False)])
def test_profile_child_loads_and_calls_the_candidate(tmp_path: Path, case: str, ok: bool) -> None:
    """The child reuses the runner's loading steps: if the runner changes them, this fails."""
    import subprocess

    from evaluator.profile_child import ProfileChildReport

    job = _child_job(tmp_path, CASES / case)
    run = subprocess.run(
        [sys.executable, "-m", "evaluator.profile_child", str(job)],
        env={**_env(), "HOME": str(tmp_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report = ProfileChildReport.model_validate_json((tmp_path / "profile-report.json").read_text())
    assert report.ok is ok, report
    if ok:
        # two warm-up calls, then the two profiled ones (kb_relu prints once per call)
        assert report.calls == 2 and run.stdout.count("candidate dtype") == 4
    else:
        assert report.message and "RuntimeError: kernel launch failed" in report.message


def test_bottleneck_names_time_that_is_not_kernel_time() -> None:
    """The issue's Triton case: a 3.2 us kernel timed at 40 us is mostly launch cost; say so."""
    from evaluator.profiling.bottleneck import host_overhead_us

    kernels = ncu.parse((DATA / "ncu_raw_relu_small.csv").read_text()).kernels
    assert host_overhead_us(kernels, 1, 0.040) == pytest.approx(36.8)
    assert host_overhead_us(kernels, 1, 0.004) is None  # within 1.5x + 2 us of the kernel
    assert host_overhead_us(kernels, 1, None) is None
    line = summarize(kernels, None, median_ms=0.040, calls=1)
    assert line is not None and "Of the 40 us timed per call, 36.8 us is not kernel time" in line
    assert "Next: cut launches and host work per call" in line
    near = summarize(kernels, None, median_ms=0.0041, calls=1)
    assert near is not None and "not kernel time" not in near and "Next: more independent work" in near
    # two calls in the window: kernel time per call is the total over two
    assert host_overhead_us(kernels, 2, 0.010) == pytest.approx(8.4)


def test_kjudge_eval_table_shows_the_profile() -> None:
    from evaluator.cli import format_result
    from evaluator.profiling.models import Profile
    from evaluator.result import Result, Verdict

    kernels = ncu.parse((DATA / "ncu_raw_relu_large.csv").read_text()).kernels
    for k in kernels:
        k.bound = kernel_bound(k)
    profile = Profile(available=True, profiler="ncu 2025.3", kernels=kernels, bottleneck="memory-bound: ...")
    text = format_result(Result(problem_id="p", verdict=Verdict.CORRECT, profile=profile))
    rows = [line.split(None, 1) for line in text.splitlines()]
    assert ["profile", "memory-bound: ..."] in rows
    kernel_rows = [value for key, value in rows if key == "kernel"]
    assert kernel_rows[0].startswith("relu_kernel x2: 3216.21 us  DRAM 83%  SM 18%  occupancy 86%  16 regs")
    assert "stalls long_scoreboard" in kernel_rows[0]
    assert kernel_rows[1].startswith("at::native::vectorized_elementwise_kernel")
    none = format_result(Result(problem_id="p", verdict=Verdict.CORRECT, profile=Profile.unavailable("why")))
    assert "none: why" in none


def _fake_rocprofv3(tmp_path: Path, refuse_counters: bool) -> Path:
    """A stand-in rocprofv3 (a real one needs an AMD GPU): writes the recorded CSV files, nested
    by host and pid as rocprofv3 does, into -d; with `refuse_counters` it writes nothing when
    asked for --pmc, as a rocprofv3 that cannot collect a counter set."""
    root = tmp_path / "rocm"
    (root / "bin").mkdir(parents=True)
    for name in ("kernel_trace", "counter_collection", "marker_api_trace"):
        (root / f"{name}.csv").write_text((DATA / f"rocprof_{name}.csv").read_text())
    script = textwrap.dedent(
        f"""\\
        #!/bin/sh
        out=""; pmc=0
        while [ $# -gt 0 ]; do
          case "$1" in
            -d) out="$2"; shift ;;
            --pmc) pmc=1 ;;
            --) break ;;
          esac
          shift
        done
        echo "pmc=$pmc" >> "$out/../rocprof-calls"
        if [ "$pmc" = 1 ] && [ "{int(refuse_counters)}" = 1 ]; then exit 1; fi
        mkdir -p "$out/host/4711"
        cp {root}/kernel_trace.csv "$out/host/4711/kjudge_kernel_trace.csv"
        cp {root}/marker_api_trace.csv "$out/host/4711/kjudge_marker_api_trace.csv"
        if [ "$pmc" = 1 ]; then cp {root}/counter_collection.csv "$out/host/4711/kjudge_counter_collection.csv"; fi
        """
    )
    return _executable(root / "bin" / "rocprofv3", script)


@pytest.mark.parametrize("refuse_counters", [False, True])
def test_profile_candidate_on_rocm_with_a_stand_in_rocprofv3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refuse_counters: bool
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("KJUDGE_ROCPROF", str(_fake_rocprofv3(tmp_path, refuse_counters)))
    mi300 = Target(backend=Backend.ROCM, arch="gfx942", device="AMD Instinct MI300X")
    profile = profile_candidate(_job(scratch), mi300, scratch=scratch, env=_env(), timeout_s=60)
    assert profile.available, profile.message
    assert profile.profiler == "rocprofv3" and profile.calls == 3 and profile.kernels_seen == 3
    (k,) = profile.kernels
    assert k.name.startswith("relu_kernel") and k.calls == 3 and k.duration_us == pytest.approx(4.0)
    calls = (scratch / "rocprof-calls").read_text().split()
    if refuse_counters:
        assert calls == ["pmc=1", "pmc=0"] and "kernel trace only" in (profile.message or "")
        assert k.dram_gbps is None and k.registers_per_thread == 16
    else:
        assert calls == ["pmc=1"] and profile.message is None
        assert k.dram_pct_of_peak == pytest.approx(k.dram_gbps / 5300 * 100)  # type: ignore[operator]


RECORDED = sorted((DATA / "recorded").glob("ncu_*.csv"))


@pytest.mark.parametrize("path", RECORDED, ids=[p.name for p in RECORDED])
def test_recorded_ncu_logs_parse(path: Path) -> None:
    """Logs recorded by ncu itself on a GPU (tests/evaluator/test_profile_gpu.py with
    KJUDGE_RECORD_PROFILE_DIR=tests/evaluator/profiling_data/recorded): the relu kernel."""
    out = ncu.parse(path.read_text())
    assert out.errors == [] and out.launches >= 1
    k = out.kernels[0]
    assert "relu_kernel" in k.name and k.duration_us and k.duration_us > 0
    assert k.dram_pct_of_peak is not None and 0 < k.dram_pct_of_peak <= 100
    assert k.registers_per_thread and k.block_size == 256 and k.top_stalls


def test_output_left_by_the_run_child_is_not_taken_for_the_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run child had the scratch dir first: a planted ncu.csv (or report) must not become the
    profile when the profiler itself writes nothing."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "ncu.csv").write_text((DATA / "ncu_raw_relu_small.csv").read_text())
    (scratch / "profile-report.json").mkdir()  # a directory where the report goes
    monkeypatch.setenv("KJUDGE_NCU", str(_executable(tmp_path / "ncu")))  # exits 0, writes nothing
    profile = profile_candidate(_job(scratch), H200, scratch=scratch, env=_env(), timeout_s=60)
    assert not profile.available and "no profile" in (profile.message or "")
    assert not (scratch / "ncu.csv").exists()
