"""The plain-language line an agent reads in its next turn: what limits the candidate's
kernels, and where the run sits on the problem's roofline (Result.roofline).

A kernel is called
- memory-bound when a memory unit (DRAM, or the busiest of L1/L2/DRAM) runs at >= 60% of its
  peak and above the SMs,
- compute-bound when the SMs (CUs) run at >= 60% of their peak and above memory,
- latency-bound when neither reaches 60%: the hardware waits (on memory latency, barriers,
  too few warps in flight, launch gaps) more than it works; the top stall reason says on what.
60% is Nsight Compute's own threshold for a unit that is "the bottleneck" in its Speed Of Light
section.
"""

from __future__ import annotations

from evaluator.profiling.models import KernelProfile
from evaluator.result import Roofline

BUSY_PCT = 60.0
NEAR_ROOFLINE = 0.7
# Timed median vs kernel time: above 1.5x (and 2 us) the difference is worth naming.
OVERHEAD_RATIO = 1.5
OVERHEAD_MIN_US = 2.0
# What each stall means in an agent's terms (Nsight Compute's warp-state descriptions).
STALL_HINTS = {
    "long_scoreboard": "waiting on global/local memory loads",
    "short_scoreboard": "waiting on shared memory or special math",
    "barrier": "waiting at __syncthreads",
    "membar": "waiting on memory fences",
    "math_pipe_throttle": "math pipes saturated",
    "mio_throttle": "shared-memory/instruction queue full",
    "lg_throttle": "too many global memory instructions queued",
    "tex_throttle": "texture/L1 queue full",
    "wait": "fixed-latency dependencies",
    "not_selected": "other warps issued first (enough parallelism)",
    "no_instruction": "instruction cache misses",
    "branch_resolving": "branch resolution",
    "dispatch_stall": "dispatch stalls",
    "drain": "draining memory writes at exit",
    "sleeping": "sleeping",
    "imc_miss": "constant cache misses",
    "misc": "miscellaneous",
}


def kernel_bound(k: KernelProfile) -> str | None:
    memory = max((v for v in (k.dram_pct_of_peak, k.memory_pct_of_peak) if v is not None), default=None)
    compute = k.sm_pct_of_peak
    if memory is None and compute is None:
        return None
    memory, compute = memory or 0.0, compute or 0.0
    if max(memory, compute) < BUSY_PCT:
        return "latency"
    return "memory" if memory >= compute else "compute"


def _fmt_us(us: float) -> str:
    return f"{us / 1e3:.3g} ms" if us >= 1000 else f"{us:.3g} us"


def _facts(k: KernelProfile) -> str:
    parts = []
    if k.dram_gbps is not None:
        rate = f"{k.dram_gbps / 1e3:.2f} TB/s" if k.dram_gbps >= 1000 else f"{k.dram_gbps:.0f} GB/s"
        pct = f" ({k.dram_pct_of_peak:.0f}% of peak)" if k.dram_pct_of_peak is not None else ""
        parts.append(f"DRAM {rate}{pct}")
    elif k.dram_pct_of_peak is not None:
        parts.append(f"DRAM {k.dram_pct_of_peak:.0f}% of peak")
    if k.sm_pct_of_peak is not None:
        parts.append(f"compute {k.sm_pct_of_peak:.0f}% of peak")
    if k.achieved_occupancy_pct is not None:
        parts.append(f"occupancy {k.achieved_occupancy_pct:.0f}%")
    if k.top_stalls:
        top = k.top_stalls[0]
        hint = STALL_HINTS.get(top.reason)
        parts.append(f"top stall {top.reason}" + (f" ({hint})" if hint else ""))
    return ", ".join(parts)


def _advice(bound: str, roofline: Roofline | None) -> str:
    near = roofline is not None and roofline.fraction_of_bound >= NEAR_ROOFLINE
    if bound == "memory":
        if near and roofline is not None and roofline.limiter == "memory":
            return "close to the memory roofline: only moving fewer bytes (fusion, smaller dtypes) helps"
        if roofline is not None and roofline.limiter == "compute":
            return "the problem is compute-limited, so the kernel re-reads data: reuse it from shared memory/registers (tiling)"
        return "below the memory roofline: coalesce and vectorize accesses, avoid re-reading data"
    if bound == "compute":
        if near:
            return "close to the compute roofline: a faster instruction mix (tensor cores, lower precision within tolerance) is what is left"
        return "cut instructions per element or move the math to tensor cores"
    return "more independent work in flight (more blocks, more loads per thread), fewer launches and synchronizations"


def host_overhead_us(kernels: list[KernelProfile], calls: int, median_ms: float | None) -> float | None:
    """Per call, how much of the timed median the profiled kernels do not account for (launch
    cost, host work, gaps between kernels), when that is most of it; None otherwise."""
    if median_ms is None or calls < 1:
        return None
    device_us = sum((k.duration_us or 0.0) * k.calls for k in kernels) / calls
    timed_us = median_ms * 1e3
    if device_us <= 0 or timed_us < OVERHEAD_RATIO * device_us + OVERHEAD_MIN_US:
        return None
    return timed_us - device_us


def summarize(
    kernels: list[KernelProfile],
    roofline: Roofline | None,
    *,
    median_ms: float | None = None,
    calls: int = 1,
) -> str | None:
    """One line: the bound of the kernel that takes most of the time, its key numbers, where the
    run is on the roofline, how much of the timed median is not kernel time, and what to try.
    None when the profile has no numbers. `median_ms`: the Result's timing (None: unknown, or the
    profile saw only part of the kernels); `calls`: candidate calls in the profiled window."""
    if not kernels:
        return None
    main = kernels[0]
    bound = main.bound or kernel_bound(main)
    if bound is None:
        return None
    who = f"`{main.name.split('(')[0][:80]}`"
    if len(kernels) > 1 and main.share_of_time is not None:
        who += f" ({main.share_of_time:.0%} of the time of {len(kernels)} kernels)"
    if main.duration_us is not None:
        who += f", {_fmt_us(main.duration_us)} per launch"
    line = f"{bound}-bound: {who}; {_facts(main)}."
    if roofline is not None:
        line += (
            f" On the problem's roofline ({roofline.limiter}-limited, bound {_fmt_us(roofline.bound_ms * 1e3)})"
            f" the run reaches {roofline.fraction_of_bound:.0%} of the bound."
        )
    advice = _advice(bound, roofline)
    overhead = host_overhead_us(kernels, calls, median_ms)
    if overhead is not None and median_ms is not None:
        line += (
            f" Of the {_fmt_us(median_ms * 1e3)} timed per call, {_fmt_us(overhead)} is not kernel time"
            " (launch cost, host work, gaps between kernels)."
        )
        if overhead > median_ms * 1e3 / 2:
            advice = "cut launches and host work per call (fuse kernels, fewer Python-side ops, CUDA graphs)"
    return line + f" Next: {advice}."
