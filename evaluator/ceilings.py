"""A device's measured ceilings (copy bandwidth, matmul rates) and how the parent learns them.

The model is light (no torch import) so the parent, which never initializes a GPU, can hold it.
`probe_ceilings` asks a trusted child (`python -m evaluator.roofline cuda`, kjudge's own code,
never a candidate's process) once per device model and PyTorch release, caches the answer on
disk beside the target probe, and hands it to every run child in its job: the roofline report
and the `exceeds_roofline` check then cost nothing per evaluation, and a candidate cannot slow
the measurement down to make itself look possible.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from evaluator.result import Target


class Ceilings(BaseModel):
    """What one device measurably sustains. Rates are TFLOP/s of dense square matmuls, which on
    GPUs are the practical peaks (fp32 without TF32 is the CUDA-core / vector rate)."""

    device: str
    backend: str
    copy_gbps: float = Field(description="device-to-device copy, counting bytes read + written")
    fp32_tflops: float = Field(description="fp32 matmul without TF32: the vector (FMA) rate")
    tf32_tflops: float | None = None
    fp16_tflops: float | None = None
    bf16_tflops: float | None = None
    torch_version: str = ""
    # "measured" (probe_ceilings) or "datasheet" (published_ceilings: the vendor's peaks, used
    # only where no measurement could be made)
    source: str = "measured"
    measured_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())
    seconds: float = 0.0

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.copy_gbps * 1e9

    def peak_flops(self, dtype: Any = "float32") -> float:
        """FLOP/s ceiling for work in `dtype` (a name or a torch.dtype): the fastest rate a
        correct kernel may use (an fp32 problem may legitimately use TF32 within its tolerance)."""
        name = str(dtype).removeprefix("torch.")
        rates = {
            "float32": [self.fp32_tflops, self.tf32_tflops],
            "float16": [self.fp16_tflops, self.fp32_tflops],
            "bfloat16": [self.bf16_tflops, self.fp32_tflops],
        }.get(name, [self.fp32_tflops])
        return max(r for r in rates if r is not None) * 1e12

    def max_flops(self) -> float:
        """The fastest rate of any precision: the integrity bound (no correct kernel beats it)."""
        rates = [self.fp32_tflops, self.tf32_tflops, self.fp16_tflops, self.bf16_tflops]
        return max(r for r in rates if r is not None) * 1e12


def published_ceilings(target: Target) -> Ceilings | None:
    """The device's datasheet peaks (evaluator/device_facts.py) as Ceilings, for a GPU whose
    measurement failed: a trusted upper bound is better for the roofline and the
    `exceeds_roofline` check than none (which makes the run child, the candidate's own process,
    measure). Peaks are above what any kernel reaches, so fractions of the bound read lower
    than against measured ceilings. None for a device without figures or a CPU target."""
    from evaluator.device_facts import device_peaks

    peaks = device_peaks(target.device) if target.backend.value != "cpu" else None
    if peaks is None:
        return None
    return Ceilings(
        device=target.device,
        backend=target.backend.value,
        copy_gbps=peaks.hbm_tbps * 1e3,
        fp32_tflops=peaks.fp32_tflops,
        tf32_tflops=peaks.tf32_tflops,
        fp16_tflops=peaks.fp16_tflops,
        bf16_tflops=peaks.bf16_tflops,
        source="datasheet",
    )


_PROBED: dict[str, Ceilings] = {}


def _cache_file(cache_dir: Path, target: Target, torch_version: str, env: dict[str, str]) -> Path:
    visible = "|".join(
        f"{k}={env.get(k, '')}"
        for k in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
    )
    key = "\0".join((target.backend.value, target.arch, target.device, torch_version, visible))
    return cache_dir / "ceilings" / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def probe_ceilings(
    target: Target, env: dict[str, str], cache_dir: Path, torch_version: str, timeout_s: float = 300.0
) -> Ceilings | None:
    """In the parent: the target device's ceilings, measured by a child once and cached.
    None on a CPU target or when the measurement failed (the run child then measures itself)."""
    if target.backend.value == "cpu":
        return None
    path = _cache_file(cache_dir, target, torch_version, env)
    if str(path) in _PROBED:
        return _PROBED[str(path)]
    try:
        ceilings = Ceilings.model_validate_json(path.read_text())
    except (OSError, ValueError):
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "evaluator.roofline", "cuda"],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                stdin=subprocess.DEVNULL,
            )
            ceilings = Ceilings.model_validate_json(proc.stdout.strip().splitlines()[-1])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(ceilings.model_dump_json())
        tmp.replace(path)
    _PROBED[str(path)] = ceilings
    return ceilings
