"""Nsight Compute (`ncu`): where it is, the command line kjudge runs, and its CSV parsed.

The child (evaluator/profile_child.py) calls the candidate between cudaProfilerStart and
cudaProfilerStop, so `--profile-from-start off` profiles the candidate's own kernels only: not
the warm-up, not input generation, not the reference, not timing's L2 flush (no timing runs in
that child at all). Each kernel is replayed once per counter pass; ncu flushes caches before
each pass (`--cache-control all`, its default), so like kjudge's timing it sees a cold L2.
`--clock-control none` keeps the GPU's own clocks, so a duration is comparable with the
Result's timing (ncu's default locks base clocks, which on an H200 makes a compute-bound kernel
look up to ~1.8x slower than it runs).

Output: `--csv --page raw --print-units base` into a log file in the scratch dir: a header row
(ID, Process ID, Process Name, Host Name, Kernel Name, Context, Stream, Block Size, Grid Size,
Device, CC, then one column per metric), a units row, then one row per profiled launch. The
parser also reads the `--page details` layout (one row per metric, with Section Name, Metric
Name, Metric Unit and Metric Value columns) so either page gives the same result.
"""

from __future__ import annotations

import csv
import functools
import glob
import io
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.profiling.models import KernelProfile, StallReason
from evaluator.profiling.units import number, to_bytes, to_bytes_per_s, to_ns

NCU_ENV = "KJUDGE_NCU"
LOG_NAME = "ncu.csv"
# Kernels profiled at most: each one is replayed for every counter pass (~40 passes here), so a
# candidate that launches thousands of kernels would otherwise take minutes.
LAUNCH_COUNT = 64

DURATION = "gpu__time_duration.sum"
DRAM_BYTES = "dram__bytes.sum"
DRAM_RATE = "dram__bytes.sum.per_second"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
REGISTERS = "launch__registers_per_thread"
SMEM_STATIC = "launch__shared_mem_per_block_static"
SMEM_DYNAMIC = "launch__shared_mem_per_block_dynamic"
BLOCK = "launch__block_size"
GRID = "launch__grid_size"
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
# A regex, not a list: the stall reasons differ between architectures and ncu versions, and one
# unknown metric name makes ncu refuse the whole run.
STALL_METRICS = r"regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
METRICS = (
    DURATION,
    DRAM_BYTES,
    DRAM_RATE,
    DRAM_PCT,
    SM_PCT,
    MEMORY_PCT,
    OCCUPANCY,
    THEORETICAL_OCCUPANCY,
    REGISTERS,
    SMEM_STATIC,
    SMEM_DYNAMIC,
    BLOCK,
    GRID,
    STALL_METRICS,
)
# What is retried alone when ncu refuses the full list (a metric this ncu or GPU does not know).
CORE_METRICS = (DURATION, DRAM_PCT, SM_PCT, OCCUPANCY, REGISTERS, SMEM_STATIC, SMEM_DYNAMIC, BLOCK, GRID)
# "selected" is the cycle a warp issues: not a stall. "*_not_issued" variants double count.
_NOT_STALLS = {"selected"}
_PERMISSION = "ERR_NVGPUCTRPERM"


def find_tool(
    name: str,
    override: str,
    home_vars: Sequence[str],
    default_home: str,
    env: Mapping[str, str] | None = None,
    also: Sequence[str] = (),
) -> str | None:
    """A profiler's executable: `$override` (None if that is not executable), else `name` on
    PATH, else <home>/bin/<name> for the toolkit homes `home_vars` name, then `default_home`,
    else the first executable of `also`. None when there is none."""
    env = os.environ if env is None else env
    configured = env.get(override, "").strip()
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    found = shutil.which(name, path=env.get("PATH"))
    if found:
        return found
    homes = [env.get(var) for var in home_vars] + [default_home]
    candidates = [str(Path(home) / "bin" / name) for home in homes if home] + list(also)
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


def find_ncu(env: dict[str, str] | None = None) -> str | None:
    """`KJUDGE_NCU`, else `ncu` on PATH, else the CUDA toolkit's, else the newest
    /opt/nvidia/nsight-compute/<version>/ncu. None when there is none."""
    installed = sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)
    return find_tool("ncu", NCU_ENV, ("CUDA_HOME", "CUDA_PATH"), "/usr/local/cuda", env, also=installed)


@functools.cache
def ncu_version(ncu: str) -> str:
    """'ncu 2025.3.1.0' (kjudge's own binary, run in the parent), or 'ncu' if it will not say."""
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "ncu"
    match = re.search(r"Version\s+([\w.]+)", out)
    return f"ncu {match.group(1)}" if match else "ncu"


def install_dir(ncu: str) -> Path:
    """The directory the sandbox must show read-only for ncu to run (its real location, whose
    siblings hold the injection libraries and sections)."""
    return Path(os.path.realpath(ncu)).parent


def command(ncu: str, child: Sequence[str], log_path: Path, metrics: Sequence[str] = METRICS) -> list[str]:
    return [
        ncu,
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--log-file",
        str(log_path),
        "--profile-from-start",
        "off",
        "--target-processes",
        "all",
        "--launch-count",
        str(LAUNCH_COUNT),
        "--cache-control",
        "all",
        "--clock-control",
        "none",
        "--metrics",
        ",".join(metrics),
        *child,
    ]


@dataclass
class _Launch:
    """One profiled launch: its identity and {metric: (unit, value text)}."""

    name: str
    block: str = ""
    grid: str = ""
    metrics: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class NcuOutput:
    kernels: list[KernelProfile]
    launches: int
    errors: list[str]


def _csv_rows(text: str) -> list[list[str]]:
    # ncu's own ==PROF== / ==WARNING== lines and anything the program printed are not CSV rows.
    lines = [line for line in text.splitlines() if line.startswith('"')]
    return list(csv.reader(io.StringIO("\n".join(lines))))


def _launches(rows: list[list[str]]) -> list[_Launch]:
    if not rows or "ID" not in rows[0] or "Kernel Name" not in rows[0]:
        return []
    header = rows[0]
    col = {name: i for i, name in enumerate(header)}
    get = lambda row, name: row[col[name]] if name in col and col[name] < len(row) else ""  # noqa: E731
    by_id: dict[str, _Launch] = {}
    if "Metric Name" in col and "Metric Value" in col:  # --page details: one row per metric
        for row in rows[1:]:
            if len(row) < len(header) or not get(row, "ID"):
                continue
            launch = by_id.setdefault(
                get(row, "ID"),
                _Launch(get(row, "Kernel Name"), get(row, "Block Size"), get(row, "Grid Size")),
            )
            if get(row, "Metric Name"):
                launch.metrics[get(row, "Metric Name")] = (get(row, "Metric Unit"), get(row, "Metric Value"))
        return list(by_id.values())
    # --page raw: one row per launch, one column per metric, the second row holds the units
    first_metric = col.get("CC", col.get("Device", col["Kernel Name"])) + 1
    units: list[str] = [""] * len(header)
    for row in rows[1:]:
        if len(row) != len(header):
            continue
        if not get(row, "ID"):
            units = row
            continue
        launch = _Launch(get(row, "Kernel Name"), get(row, "Block Size"), get(row, "Grid Size"))
        for i in range(first_metric, len(header)):
            launch.metrics[header[i]] = (units[i], row[i])
        by_id[get(row, "ID")] = launch
    return list(by_id.values())


def _value(launch: _Launch, metric: str) -> float | None:
    unit, text = launch.metrics.get(metric, ("", ""))
    return number(text)


def _scaled(launch: _Launch, metric: str, convert) -> float | None:  # type: ignore[no-untyped-def]
    unit, text = launch.metrics.get(metric, ("", ""))
    value = number(text)
    if value is None:
        return None
    if not unit:
        return value  # --print-units base and no unit printed: already in base units
    return convert(value, unit)


def _dims(text: str) -> int | None:
    """'(256, 1, 1)' -> 256 (threads or blocks in all)."""
    parts = [number(p) for p in re.findall(r"[\d,.]+", text.replace(", ", " "))]
    if not parts or any(p is None for p in parts):
        return None
    total = 1
    for p in parts:
        total *= int(p)  # type: ignore[arg-type]
    return total


def _stalls(launch: _Launch) -> list[StallReason]:
    found: dict[str, float] = {}
    for metric in launch.metrics:
        match = STALL.match(metric)
        if match is None or match.group(1) in _NOT_STALLS or match.group(1).endswith("_not_issued"):
            continue
        value = _value(launch, metric)
        if value is not None and value > 0:
            found[match.group(1)] = value
    total = sum(found.values())
    ranked = sorted(found.items(), key=lambda kv: -kv[1])[:3]
    return [StallReason(reason=r, cycles_per_issue=round(v, 3), share=round(v / total, 3)) for r, v in ranked]


def _kernel(launch: _Launch) -> KernelProfile:
    static = _value(launch, SMEM_STATIC)
    dynamic = _value(launch, SMEM_DYNAMIC)
    smem = None if static is None and dynamic is None else int((static or 0) + (dynamic or 0))
    duration_ns = _scaled(launch, DURATION, to_ns)
    rate = _scaled(launch, DRAM_RATE, to_bytes_per_s)
    dram = _scaled(launch, DRAM_BYTES, to_bytes)
    if rate is None and dram is not None and duration_ns:
        rate = dram / (duration_ns / 1e9)
    registers = _value(launch, REGISTERS)
    block = _value(launch, BLOCK)
    grid = _value(launch, GRID)
    return KernelProfile(
        name=launch.name[:300],
        duration_us=duration_ns / 1e3 if duration_ns is not None else None,
        dram_bytes=dram,
        dram_gbps=rate / 1e9 if rate is not None else None,
        dram_pct_of_peak=_value(launch, DRAM_PCT),
        sm_pct_of_peak=_value(launch, SM_PCT),
        memory_pct_of_peak=_value(launch, MEMORY_PCT),
        achieved_occupancy_pct=_value(launch, OCCUPANCY),
        theoretical_occupancy_pct=_value(launch, THEORETICAL_OCCUPANCY),
        registers_per_thread=int(registers) if registers is not None else None,
        shared_mem_per_block_bytes=smem,
        block_size=int(block) if block is not None else _dims(launch.block),
        grid_size=int(grid) if grid is not None else _dims(launch.grid),
        top_stalls=_stalls(launch),
    )


def _weighted(group: list[KernelProfile], attr: str, by_time: bool = True) -> float | None:
    """Mean of `attr` over launches, weighted by duration (rates, percentages) or not (a
    duration, a byte count: the mean launch)."""
    pairs = [(getattr(k, attr), k.duration_us or 0.0) for k in group if getattr(k, attr) is not None]
    if not pairs:
        return None
    total = sum(w for _, w in pairs)
    if total <= 0 or not by_time:
        return sum(v for v, _ in pairs) / len(pairs)
    return sum(v * w for v, w in pairs) / total


def _merged_stalls(group: list[KernelProfile]) -> list[StallReason]:
    by_reason: dict[str, list[StallReason]] = {}
    for k in group:
        for s in k.top_stalls:
            by_reason.setdefault(s.reason, []).append(s)
    mean = {
        r: (sum(s.cycles_per_issue for s in ss) / len(group), sum(s.share for s in ss) / len(group))
        for r, ss in by_reason.items()
    }
    ranked = sorted(mean.items(), key=lambda kv: -kv[1][0])[:3]
    return [StallReason(reason=r, cycles_per_issue=round(c, 3), share=round(sh, 3)) for r, (c, sh) in ranked]


def merge(launches: Iterable[KernelProfile]) -> list[KernelProfile]:
    """Launches of the same kernel (same name and launch shape) as one entry: durations and
    bytes averaged, percentages weighted by duration; longest total time first."""
    groups: dict[tuple[str, int | None, int | None], list[KernelProfile]] = {}
    for k in launches:
        groups.setdefault((k.name, k.block_size, k.grid_size), []).append(k)
    per_launch = ("duration_us", "dram_bytes")
    averaged = (
        "dram_gbps",
        "dram_pct_of_peak",
        "sm_pct_of_peak",
        "memory_pct_of_peak",
        "achieved_occupancy_pct",
    )
    merged = [
        group[0].model_copy(
            update={
                "calls": sum(k.calls for k in group),
                **{attr: _weighted(group, attr, by_time=False) for attr in per_launch},
                **{attr: _weighted(group, attr) for attr in averaged},
                "top_stalls": _merged_stalls(group),
            }
        )
        for group in groups.values()
    ]
    total = sum((k.duration_us or 0.0) * k.calls for k in merged)
    for k in merged:
        if total > 0 and k.duration_us is not None:
            k.share_of_time = round(k.duration_us * k.calls / total, 4)
    merged.sort(key=lambda k: -((k.duration_us or 0.0) * k.calls))
    return merged


def parse(text: str) -> NcuOutput:
    """ncu's log (CSV rows among its own ==PROF==/==ERROR== lines) -> kernels, longest first."""
    errors = [line.strip() for line in text.splitlines() if line.startswith("==ERROR==")]
    launches = [_kernel(launch) for launch in _launches(_csv_rows(text))]
    return NcuOutput(kernels=merge(launches), launches=len(launches), errors=errors)


def unknown_metric(errors: list[str]) -> bool:
    """ncu refused a metric name (its version or the GPU does not have it)."""
    return any("metric" in e.lower() for e in errors)


def explain_errors(errors: list[str], text: str) -> str:
    """One line for the Result from ncu's ==ERROR== lines."""
    joined = " ".join(errors) + " " + text[-2000:]
    if _PERMISSION in joined:
        return (
            "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): the driver "
            "restricts them to administrators and the sandbox has no capabilities; the operator can "
            "allow them for all users (nvidia module option NVreg_RestrictProfilingToAdminUsers=0, "
            "see docs/internals.md, Profile)"
        )
    if errors:
        return "ncu failed: " + errors[0].removeprefix("==ERROR==").strip()[:300]
    return ""


def counters_restricted() -> bool | None:
    """What the NVIDIA driver says (RmProfilingAdminOnly in /proc/driver/nvidia/params); None if
    it cannot be read."""
    try:
        text = Path("/proc/driver/nvidia/params").read_text()
    except OSError:
        return None
    match = re.search(r"RmProfilingAdminOnly:\s*(\d+)", text)
    return None if match is None else match.group(1) != "0"
