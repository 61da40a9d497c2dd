"""rocprofv3 (ROCm): where it is, the command line kjudge runs, and its CSV files parsed.

No AMD GPU is lent to kjudge's CI: this is written from rocprofv3's documented CSV layout
(rocprofiler-sdk, "Using rocprofv3": kernel_trace.csv, counter_collection.csv,
marker_api_trace.csv) and tested on recorded files in that layout, not on a device.

One run collects the kernel trace, the ROCTx markers and a few counters:
  rocprofv3 --kernel-trace --marker-trace --pmc <counters> --output-format csv -d DIR -o kjudge
            -- python -m evaluator.profile_child JOB.json
The child pushes a ROCTx range (torch.cuda.nvtx is ROCTx on ROCm) around the candidate's calls;
kernels that ran inside it are the candidate's. The default counters (`KJUDGE_ROCPROF_COUNTERS`
overrides them, space-separated) are derived metrics of rocprofiler's gfx9 tables:
FETCH_SIZE / WRITE_SIZE (kilobytes from/to device memory), VALUBusy (% of time the vector ALUs
are busy: kjudge's "compute %" on AMD) and MemUnitBusy (% of time the memory unit is busy).
AMD's counters say nothing about warp stalls, so `top_stalls` stays empty.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluator.device_facts import device_peaks
from evaluator.profiling.files import read_untrusted, walk_untrusted
from evaluator.profiling.models import KernelProfile
from evaluator.profiling.ncu import find_tool, merge
from evaluator.profiling.units import number

ROCPROF_ENV = "KJUDGE_ROCPROF"
COUNTERS_ENV = "KJUDGE_ROCPROF_COUNTERS"
DEFAULT_COUNTERS = ("FETCH_SIZE", "WRITE_SIZE", "VALUBusy", "MemUnitBusy")
OUTPUT_DIR = "rocprof"
OCCUPANCY_COUNTERS = ("OccupancyPercent", "MeanOccupancyPerCU")


def find_rocprofv3(env: dict[str, str] | None = None) -> str | None:
    return find_tool("rocprofv3", ROCPROF_ENV, ("ROCM_PATH", "ROCM_HOME"), "/opt/rocm", env)


def counters(env: dict[str, str] | None = None) -> list[str]:
    env = os.environ if env is None else env
    configured = env.get(COUNTERS_ENV, "").split()
    return configured or list(DEFAULT_COUNTERS)


def command(rocprofv3: str, child: Sequence[str], out_dir: Path, pmc: Sequence[str]) -> list[str]:
    return [
        rocprofv3,
        "--kernel-trace",
        "--marker-trace",
        *(["--pmc", *pmc] if pmc else []),
        "--output-format",
        "csv",
        "-d",
        str(out_dir),
        "-o",
        "kjudge",
        "--",
        *child,
    ]


@dataclass
class RocprofOutput:
    kernels: list[KernelProfile]
    launches: int
    window_found: bool


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _first(row: dict[str, str], *names: str) -> float | None:
    for name in names:
        value = number(row.get(name))
        if value is not None:
            return value
    return None


def _window(markers: list[dict[str, str]], range_name: str) -> tuple[float, float] | None:
    """The [start, end] of the child's ROCTx range (the Function column holds a range's message)."""
    spans = [
        (number(r.get("Start_Timestamp")), number(r.get("End_Timestamp")))
        for r in markers
        if (r.get("Function") or "").strip() == range_name
    ]
    spans = [(s, e) for s, e in spans if s is not None and e is not None]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)  # type: ignore[type-var]


def parse(
    kernel_trace: str,
    counter_collection: str = "",
    marker_trace: str = "",
    *,
    range_name: str,
    device_name: str = "",
) -> RocprofOutput:
    """rocprofv3's CSV texts -> the kernels that ran inside the child's range, longest first.
    Without the range (no marker file) every dispatch counts, and `window_found` says so."""
    window = _window(_rows(marker_trace), range_name) if marker_trace else None
    by_dispatch: dict[str, dict[str, float]] = {}
    for row in _rows(counter_collection) if counter_collection else []:
        value = number(row.get("Counter_Value"))
        name = (row.get("Counter_Name") or "").strip()
        if value is None or not name:
            continue
        counts = by_dispatch.setdefault(row.get("Dispatch_Id") or row.get("Correlation_Id") or "", {})
        # A counter can come split over dimensions (XCDs, instances): the dispatch's value is the sum.
        counts[name] = counts.get(name, 0.0) + value
    peaks = device_peaks(device_name) if device_name else None
    launches: list[KernelProfile] = []
    for row in _rows(kernel_trace):
        if (row.get("Kind") or "KERNEL_DISPATCH") != "KERNEL_DISPATCH":
            continue
        start, end = number(row.get("Start_Timestamp")), number(row.get("End_Timestamp"))
        if start is None or end is None or end < start:
            continue
        if window is not None and not (window[0] <= start and end <= window[1]):
            continue
        launches.append(_kernel(row, start, end, by_dispatch.get(row.get("Dispatch_Id") or "", {}), peaks))
    return RocprofOutput(kernels=merge(launches), launches=len(launches), window_found=window is not None)


def _kernel(row: dict[str, str], start: float, end: float, counts: dict[str, float], peaks) -> KernelProfile:  # type: ignore[no-untyped-def]
    duration_ns = end - start
    wg = [_first(row, f"Workgroup_Size_{axis}") or 1.0 for axis in "XYZ"]
    grid = [_first(row, f"Grid_Size_{axis}") or 1.0 for axis in "XYZ"]
    threads = int(wg[0] * wg[1] * wg[2])
    # AMD's grid size counts work-items, not workgroups.
    blocks = 1
    for g, w in zip(grid, wg, strict=True):
        blocks *= max(1, -(-int(g) // max(1, int(w))))
    dram = None
    if "FETCH_SIZE" in counts or "WRITE_SIZE" in counts:
        dram = (counts.get("FETCH_SIZE", 0.0) + counts.get("WRITE_SIZE", 0.0)) * 1024  # kilobytes
    gbps = dram / duration_ns if dram is not None and duration_ns > 0 else None  # bytes/ns = GB/s
    pct = gbps / (peaks.hbm_tbps * 1e3) * 100 if gbps is not None and peaks is not None else None
    occupancy = next((counts[c] for c in OCCUPANCY_COUNTERS if c in counts), None)
    vgprs = _first(row, "VGPR_Count", "Arch_VGPR_Count", "Vgpr_Count")
    lds = _first(row, "LDS_Block_Size", "Lds_Block_Size", "Group_Segment_Size")
    return KernelProfile(
        name=(row.get("Kernel_Name") or "?")[:300],
        duration_us=duration_ns / 1e3,
        dram_bytes=dram,
        dram_gbps=gbps,
        dram_pct_of_peak=pct,
        sm_pct_of_peak=counts.get("VALUBusy"),
        memory_pct_of_peak=counts.get("MemUnitBusy"),
        achieved_occupancy_pct=occupancy,
        registers_per_thread=int(vgprs) if vgprs is not None else None,
        shared_mem_per_block_bytes=int(lds) if lds is not None else None,
        block_size=threads,
        grid_size=blocks,
    )


def read_output(out_dir: Path) -> tuple[str, str, str]:
    """(kernel trace, counter collection, marker trace) texts found under rocprofv3's output
    directory (it nests them by host and pid unless told otherwise); '' where missing. The
    directory was writable by the candidate: no symlinks are followed (evaluator/profiling/files)."""
    files = sorted(walk_untrusted(out_dir), key=lambda p: p.stat().st_mtime)

    def newest(suffix: str) -> str:
        found = [p for p in files if p.name.endswith(suffix)]
        return read_untrusted(found[-1]) if found else ""

    return newest("kernel_trace.csv"), newest("counter_collection.csv"), newest("marker_api_trace.csv")
