"""Which GPUs this machine has, asked of a short-lived child so the launcher never holds a
device context. `python -m worker.devices` prints the list as JSON."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

from pydantic import BaseModel

from evaluator.targets import rocm as rocm_target


class Gpu(BaseModel):
    index: int  # torch's ordinal inside the launcher's own visibility
    # What pins a child to this GPU alone: CUDA_VISIBLE_DEVICES on NVIDIA, ROCR_VISIBLE_DEVICES on
    # ROCm (evaluator/targets/rocm.py: HIP_VISIBLE_DEVICES counts inside ROCR's list).
    visible_id: str
    backend: str  # cuda | rocm
    arch: str  # sm_90, gfx942, ...
    name: str


def host_isa() -> str:
    """The CPU's ISA as kjudge names CPU targets (x86_64, aarch64)."""
    return platform.machine().lower() or "x86_64"


def _probe() -> list[Gpu]:
    import torch

    if not torch.cuda.is_available():
        return []
    rocm = bool(getattr(torch.version, "hip", None))
    count = torch.cuda.device_count()
    if rocm:
        visible = rocm_target.physical_ids(os.environ, count)
    else:
        visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    gpus = []
    for i in range(count):
        props = torch.cuda.get_device_properties(i)
        arch = props.gcnArchName.split(":")[0] if rocm else f"sm_{props.major}{props.minor}"
        gpus.append(
            Gpu(
                index=i,
                visible_id=visible[i] if i < len(visible) else str(i),
                backend="rocm" if rocm else "cuda",
                arch=arch,
                name=props.name,
            )
        )
    return gpus


def list_gpus(timeout_s: float = 120.0) -> list[Gpu]:
    """The GPUs torch sees here; [] when there are none or torch cannot tell."""
    try:
        out = subprocess.run(
            [sys.executable, "-m", "worker.devices"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=True,
        ).stdout
        return [Gpu.model_validate(item) for item in json.loads(out.strip().splitlines()[-1])]
    except (subprocess.SubprocessError, json.JSONDecodeError, IndexError, ValueError):
        return []


if __name__ == "__main__":
    print(json.dumps([g.model_dump() for g in _probe()]))
