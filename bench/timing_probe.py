"""Where does a small kernel's timing spread come from? A diagnostic, not a benchmark.

bench/timing_stability.py showed kernels under ~10 µs (ReLU 16x16384, softmax 256x4096) with
medians 20-30 % apart between separate evaluations, each evaluation itself precise to ~1 %. So
something fixed per process moves the number. This runs N fresh processes; in each it times the
same op several ways, and several times over with new allocations, and reads the SM clock:

- `kjudge`: evaluator.timing.time_gpu as an evaluation uses it;
- `graph_realloc`: CUDA-graph replay of k calls on fresh, L2-flushed inputs, captured again on
  new allocations (shifted by a random spacer) several times in the process;
- `graph_hot`: one graph of k calls on one input, nothing flushed (launch + execution only);
- the SM clock (NVML) around the measurements.

If the per-allocation medians inside one process vary as much as between processes, placement
in memory is the cause; if they agree inside a process and differ between processes, it is the
process (context, clocks).

    python bench/timing_probe.py --processes 8 --out probe.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.provenance import commit  # noqa: E402

CASES = {
    "relu 16x16384": ((16, 16384), "relu"),
    "softmax 256x4096": ((256, 4096), "softmax"),
    "relu 256x16384": ((256, 16384), "relu"),
}


def _op(name: str):  # type: ignore[no-untyped-def]
    import torch

    if name == "relu":
        return torch.relu
    return lambda x: torch.softmax(x, dim=-1)


def _clock() -> dict[str, Any]:
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {
            "sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "mem_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "throttle": int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)),
            "temp_c": pynvml.nvmlDeviceGetTemperature(h, 0),
        }
    except Exception as exc:  # noqa: BLE001  a diagnostic: say why there is no clock
        return {"error": str(exc)[:200]}


def _graph_median(fn, shape, k: int, flush, reps: int, hot: bool, spacer_mb: int) -> float:  # type: ignore[no-untyped-def]
    import torch

    spacer = torch.empty(spacer_mb << 20, dtype=torch.int8, device="cuda")
    sets = [torch.randn(shape, device="cuda") for _ in range(1 if hot else k)]
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = [fn(sets[0 if hot else i]) for i in range(k)]
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        if not hot:
            for s in sets:
                s.normal_()
            flush()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / k * 1000.0)
    del g, outs, sets, spacer
    return statistics.median(times)


def child(out: Path) -> None:
    import random

    import torch

    from evaluator.options import TimingOptions
    from evaluator.timing import L2Flusher, Subject, time_gpu

    torch.cuda.init()
    flush = L2Flusher(torch.device("cuda"))
    rows: dict[str, Any] = {"clock_start": _clock()}
    for case, (shape, opname) in CASES.items():
        fn = _op(opname)

        def fresh(shape: tuple[int, ...] = shape) -> tuple[int, list[Any]]:
            return 0, [torch.randn(shape, device="cuda")]

        subject = Subject(call=lambda inputs, fn=fn: fn(*inputs), fresh=fresh)
        t0 = time.perf_counter()
        stats = time_gpu(subject, TimingOptions())
        kjudge_us = stats.median_ms * 1000.0
        clock_mid = _clock()
        realloc = [
            round(_graph_median(fn, shape, 128, flush, 20, False, random.randint(1, 64)), 3) for _ in range(4)
        ]
        hot = round(_graph_median(fn, shape, 128, flush, 20, True, 1), 3)
        rows[case] = {
            "kjudge_us": round(kjudge_us, 3),
            "kjudge_method": stats.method,
            "kjudge_n": stats.n,
            "kjudge_k": stats.calls_per_sample,
            "graph_realloc_us": realloc,
            "graph_hot_us": hot,
            "clock_mid": clock_mid,
            "seconds": round(time.perf_counter() - t0, 2),
        }
    rows["clock_end"] = _clock()
    out.write_text(json.dumps(rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("timing_probe.json"))
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    runs = []
    for i in range(args.processes):
        tmp = args.out.with_suffix(f".{i}.tmp")
        subprocess.run([sys.executable, __file__, "--child", str(tmp)], check=True)
        runs.append(json.loads(tmp.read_text()))
        tmp.unlink()
    print(f"{'case':<20}{'how':<16}{'per process (µs)':<60}max/min")
    summary = {}
    for case in CASES:
        kj = [r[case]["kjudge_us"] for r in runs]
        hot = [r[case]["graph_hot_us"] for r in runs]
        within = [max(r[case]["graph_realloc_us"]) / min(r[case]["graph_realloc_us"]) for r in runs]
        first = [r[case]["graph_realloc_us"][0] for r in runs]
        for how, vals in (("kjudge", kj), ("graph_fresh", first), ("graph_hot", hot)):
            print(f"{case:<20}{how:<16}{' '.join(f'{v:.2f}' for v in vals):<60}{max(vals) / min(vals):.3f}")
        print(f"{case:<20}{'realloc within':<16}{' '.join(f'{v:.3f}' for v in within)}")
        summary[case] = {
            "kjudge_spread": max(kj) / min(kj),
            "graph_fresh_spread": max(first) / min(first),
            "graph_hot_spread": max(hot) / min(hot),
            "realloc_within_max": max(within),
        }
    clocks = [(r["clock_start"], r["clock_end"]) for r in runs]
    print("clocks (start, end):", clocks)
    import torch

    report = {
        "bench": "timing_probe",
        "device": torch.cuda.get_device_name(0),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "headline": {
            "relu_16x16384_spread_between_processes": round(summary["relu 16x16384"]["kjudge_spread"], 3),
            "relu_16x16384_spread_between_placements_in_one_process": round(
                summary["relu 16x16384"]["realloc_within_max"], 3
            ),
        },
        "summary": summary,
        "runs": runs,
    }
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
