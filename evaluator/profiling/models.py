"""The `profile` field of the Result (DESIGN.md): per kernel, what the hardware counters say.

Light (pydantic only) so that evaluator.result can import it. Every measured field is optional:
a profiler, a device or an architecture may not offer a counter, and an absent number is better
than an invented one.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class StallReason(_Model):
    """Why warps waited instead of issuing (Nsight Compute's warp-state statistics)."""

    reason: str = Field(
        description="e.g. long_scoreboard (waiting on global memory), barrier, math_pipe_throttle"
    )
    cycles_per_issue: float = Field(
        description="average warps stalled for this reason per issued instruction (ncu's "
        "smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio)"
    )
    share: float = Field(description="this reason's fraction of all stall cycles counted (0-1)")


class KernelProfile(_Model):
    name: str = Field(description="the kernel's (demangled) name")
    calls: int = Field(default=1, description="launches of this kernel inside the profiled calls")
    duration_us: float | None = Field(default=None, description="mean duration of one launch, microseconds")
    share_of_time: float | None = Field(
        default=None, description="this kernel's fraction of the profiled kernels' total duration"
    )
    dram_bytes: float | None = Field(
        default=None, description="bytes read + written to device memory per launch"
    )
    dram_gbps: float | None = Field(default=None, description="achieved device-memory throughput, GB/s")
    dram_pct_of_peak: float | None = Field(default=None, description="device-memory throughput, % of peak")
    sm_pct_of_peak: float | None = Field(
        default=None, description="compute throughput (busiest SM/CU pipe), % of peak"
    )
    memory_pct_of_peak: float | None = Field(
        default=None, description="busiest memory unit (L1, L2 or DRAM), % of peak"
    )
    achieved_occupancy_pct: float | None = Field(
        default=None, description="active warps (waves) per SM (CU), % of the hardware maximum"
    )
    theoretical_occupancy_pct: float | None = None
    registers_per_thread: int | None = None
    shared_mem_per_block_bytes: int | None = Field(default=None, description="static + dynamic (LDS on AMD)")
    block_size: int | None = Field(default=None, description="threads per block (workgroup)")
    grid_size: int | None = Field(default=None, description="blocks (workgroups) per launch")
    top_stalls: list[StallReason] = Field(default_factory=list, description="largest first, at most 3")
    bound: str | None = Field(default=None, description="memory | compute | latency: this kernel alone")


class Profile(_Model):
    """What the profiler saw of the candidate's own kernels, or why there is nothing."""

    available: bool
    message: str | None = Field(default=None, description="why there is no profile, or what to know about it")
    profiler: str | None = Field(default=None, description="ncu <version> | rocprofv3")
    device: str | None = None
    calls: int | None = Field(default=None, description="candidate calls inside the profiled window")
    kernels: list[KernelProfile] = Field(default_factory=list, description="longest total time first")
    kernels_seen: int | None = Field(default=None, description="launches profiled (kernels may be capped)")
    bottleneck: str | None = Field(
        default=None, description="one plain-language line for an agent's next turn"
    )
    seconds: float | None = Field(default=None, description="wall time the profile took")

    @classmethod
    def unavailable(cls, message: str, **kw: object) -> Profile:
        return cls(available=False, message=message, **kw)  # type: ignore[arg-type]
