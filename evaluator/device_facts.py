"""Published facts about devices, in code: peak rates for the roofline and the cache a timing
flush must cover (issue #13, item 5). Light (no torch): the parent and the children both use it.

Peaks are the vendor's datasheet figures (dense, no sparsity; "vector" FP32 is the non-matrix
rate). They are upper bounds that no kernel reaches; kjudge's roofline prefers the ceilings it
measures (evaluator/ceilings.py) and uses these where a measurement is missing, and the profile
uses the bandwidth for "% of peak" on AMD, where rocprofv3 reports bytes but not a percentage.

Sources (AMD Instinct datasheets and product pages, amd.com/en/products/accelerators/instinct):
- MI300X: 304 CUs at 2,100 MHz; 192 GB HBM3 at 5.3 TB/s; FP32 vector 163.4 TFLOP/s, TF32 653.7,
  FP16/BF16 dense 1,307.4, FP8 dense 2,614.9; 256 MB AMD Infinity Cache; L2 4 MB per XCD x 8.
- MI325X: the MI300X's compute die and clocks (same peaks); 256 GB HBM3E at 6.0 TB/s; 256 MB
  Infinity Cache; L2 4 MB per XCD x 8.
- MI350X (CDNA 4): 256 CUs at 2,200 MHz; 288 GB HBM3E at 8.0 TB/s; FP32 vector 144.2 TFLOP/s,
  FP16/BF16 dense 2,306.9 (2.3 PF), FP8 dense 4,613.7; 256 MB Infinity Cache; L2 4 MB per XCD x 8.
- MI355X (CDNA 4): 256 CUs at 2,400 MHz; 288 GB HBM3E at 8.0 TB/s; FP32 vector 157.3 TFLOP/s,
  FP16/BF16 dense 2,516.6 (2.5 PF), FP8 dense 5,033.2; 256 MB Infinity Cache; L2 4 MB per XCD x 8.
  (Checks: CDNA 3 does 256 FP32 / 2,048 FP16 FLOPs per CU per clock, CDNA 4 256 / 4,096:
  304 x 2.1 GHz x 2,048 = 1,307.4 T; 256 x 2.4 GHz x 4,096 = 2,516.6 T.)
- NVIDIA H100 SXM5 / H200 SXM (NVIDIA datasheets): 3.35 / 4.8 TB/s HBM; FP32 67 TFLOP/s, TF32
  dense 494.7, FP16/BF16 dense 989.4; L2 50 MB (no further last-level cache).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

MiB = 1 << 20


class DevicePeaks(BaseModel):
    """Datasheet peaks of one device model."""

    name: str
    arch: str
    hbm_tbps: float = Field(description="device memory bandwidth, TB/s (10^12 bytes/s)")
    fp32_tflops: float = Field(description="FP32 vector (non-matrix) rate")
    tf32_tflops: float | None = None
    fp16_tflops: float | None = Field(default=None, description="dense FP16 matrix rate")
    bf16_tflops: float | None = Field(default=None, description="dense BF16 matrix rate")
    fp8_tflops: float | None = None
    l2_bytes: int = Field(description="all L2 slices together")
    last_level_cache_bytes: int = Field(
        default=0, description="AMD Infinity Cache (MALL) behind L2; 0 if none"
    )

    @property
    def cache_bytes(self) -> int:
        """Everything a previous call's data can still sit in between the kernel and HBM."""
        return self.l2_bytes + self.last_level_cache_bytes


def _peaks(
    name: str,
    arch: str,
    hbm_tbps: float,
    fp32: float,
    tf32: float | None,
    half: float,
    fp8: float,
    l2_mib: int,
    infinity_cache_mib: int,
) -> DevicePeaks:
    """One row of the table below (FP16 and BF16 have the same dense rate on every part in it)."""
    return DevicePeaks(
        name=name,
        arch=arch,
        hbm_tbps=hbm_tbps,
        fp32_tflops=fp32,
        tf32_tflops=tf32,
        fp16_tflops=half,
        bf16_tflops=half,
        fp8_tflops=fp8,
        l2_bytes=l2_mib * MiB,
        last_level_cache_bytes=infinity_cache_mib * MiB,
    )


# Matched against torch's device name (lower-cased, without spaces, dashes, underscores); the
# first match wins, so more specific names come before the names they contain. AMD names match
# as substrings ("AMD Instinct MI300X VF" is an MI300X); a key starting with "=" must equal the
# whole name (NVIDIA sells PCIe/NVL parts under the same chip name with other clocks and memory).
# Columns: key; name, arch, HBM TB/s; TFLOP/s FP32 (vector), TF32, FP16 = BF16 (dense), FP8
# (dense); L2 MiB, Infinity Cache MiB (0: none).
_PEAKS: tuple[tuple[str, DevicePeaks], ...] = tuple(
    (key, _peaks(*row))
    for key, *row in (
        ("mi355x", "AMD Instinct MI355X", "gfx950", 8.0, 157.3, None, 2516.6, 5033.2, 32, 256),
        ("mi350x", "AMD Instinct MI350X", "gfx950", 8.0, 144.2, None, 2306.9, 4613.7, 32, 256),
        ("mi325x", "AMD Instinct MI325X", "gfx942", 6.0, 163.4, 653.7, 1307.4, 2614.9, 32, 256),
        ("mi300x", "AMD Instinct MI300X", "gfx942", 5.3, 163.4, 653.7, 1307.4, 2614.9, 32, 256),
        ("=nvidiah200", "NVIDIA H200", "sm_90", 4.8, 67.0, 494.7, 989.4, 1978.9, 50, 0),
        ("=nvidiah10080gbhbm3", "NVIDIA H100 SXM", "sm_90", 3.35, 67.0, 494.7, 989.4, 1978.9, 50, 0),
    )
)

# Architectures whose every part has an Infinity Cache behind L2 (MI300A/X, MI325X: gfx942;
# MI350X/MI355X: gfx950), for a device whose marketing name is not in the table (a ROCm build
# may report "AMD Instinct MI300X VF" or only "AMD Radeon Graphics").
_ARCH_CACHE_BYTES = {"gfx942": 288 * MiB, "gfx950": 288 * MiB}
# Without a known size, what timing.py used before (DEFAULT_L2_BYTES).
DEFAULT_CACHE_BYTES = 256 * MiB


def _normalize(name: str) -> str:
    return re.sub(r"[\s_-]+", "", name.lower())


def device_peaks(device_name: str) -> DevicePeaks | None:
    """The datasheet peaks of a device by its torch name ('AMD Instinct MI300X', 'NVIDIA H200'),
    or None for a device kjudge has no figures for."""
    name = _normalize(device_name)
    for key, peaks in _PEAKS:
        if (name == key[1:]) if key.startswith("=") else (key in name):
            return peaks
    return None


def flush_bytes(device_name: str, arch: str = "", l2_bytes: int = 0) -> int:
    """Bytes the timing flush must write so that nothing of the previous call stays cached:
    twice every cache level between the SMs/CUs and device memory (a write-allocate cache keeps
    part of a buffer only as large as itself, so twice is what evicts all of it).

    `l2_bytes` is what the runtime reports (torch's `L2_cache_size`); on MI300-class parts that
    is one XCD's 4 MiB slice and says nothing of the 256 MiB Infinity Cache behind it, so known
    devices and AMD architectures use the datasheet's L2 + Infinity Cache instead: 2 x 288 MiB.
    """
    known = device_peaks(device_name)
    cache = known.cache_bytes if known is not None else 0
    base_arch = arch.split(":", 1)[0].strip().lower()
    cache = max(cache, _ARCH_CACHE_BYTES.get(base_arch, 0), int(l2_bytes or 0))
    return 2 * (cache or DEFAULT_CACHE_BYTES)
