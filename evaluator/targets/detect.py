"""Which device an evaluation runs on.

`detect_target(device)` imports torch and may initialize CUDA/HIP, so it runs only in children:
the runner, and the probe `python -m evaluator.targets.detect DEVICE` that the parent uses
(through `probe_target`) to learn the target before compiling for its arch. The parent never
initializes CUDA itself: a worker process must not hold a device context between jobs.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from evaluator.result import Backend, Target
from evaluator.targets.cpu import cpu_target

# Variables that decide which GPU a child sees; they are part of the probe's cache key.
VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


class TargetUnavailable(RuntimeError):
    """The requested device does not exist here (e.g. --device cuda on a machine without a GPU)."""


def detect_target(device: str) -> Target:
    """In a child: the target for `device` ('auto' | 'cpu' | 'cuda')."""
    if device == "cpu":
        return cpu_target()
    import torch

    if not torch.cuda.is_available():
        if device == "auto":
            return cpu_target()
        raise TargetUnavailable(
            "--device cuda was requested but no GPU is visible to PyTorch "
            f"(torch {torch.__version__}); use --device cpu or auto"
        )
    props = torch.cuda.get_device_properties(0)
    if getattr(torch.version, "hip", None):
        # On ROCm builds the "cuda" device is the AMD GPU; gcnArchName looks like "gfx942:sramecc+:xnack-".
        return Target(backend=Backend.ROCM, arch=props.gcnArchName.split(":")[0], device=props.name)
    return Target(backend=Backend.CUDA, arch=f"sm_{props.major}{props.minor}", device=props.name)


def torch_device(target: Target) -> str:
    return "cpu" if target.backend == Backend.CPU else "cuda"


_PROBED: dict[tuple[str, ...], Target] = {}


def probe_target(device: str, env: dict[str, str], cache_dir: Path, timeout_s: float = 120.0) -> Target:
    """In the parent: the target a child started with `env` will see.

    cpu needs no probe. Otherwise a child answers; its answer is cached in memory and on disk,
    keyed by the boot id, the visibility variables and the interpreter, so a warm `kjudge eval`
    does not pay an extra torch import. The runner re-detects and refuses a mismatch.
    """
    if device == "cpu":
        return cpu_target()
    key = _probe_key(device, env)
    if key in _PROBED:
        return _PROBED[key]
    cache_file = cache_dir / "targets" / (hashlib.sha256("\0".join(key).encode()).hexdigest()[:32] + ".json")
    try:
        target = Target.model_validate_json(cache_file.read_text())
    except (OSError, ValueError):
        target = _run_probe(device, env, timeout_s)
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(target.model_dump_json())
        tmp.replace(cache_file)
    _PROBED[key] = target
    return target


def forget_probe(device: str, env: dict[str, str], cache_dir: Path) -> None:
    """Drop a cached probe answer (the runner saw a different device)."""
    key = _probe_key(device, env)
    _PROBED.pop(key, None)
    name = hashlib.sha256("\0".join(key).encode()).hexdigest()[:32] + ".json"
    (cache_dir / "targets" / name).unlink(missing_ok=True)


def _probe_key(device: str, env: dict[str, str]) -> tuple[str, ...]:
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot_id = "unknown"
    return (device, boot_id, sys.executable, *(f"{v}={env.get(v, '')}" for v in VISIBILITY_VARS))


def _run_probe(device: str, env: dict[str, str], timeout_s: float) -> Target:
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "evaluator.targets.detect", device],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"probing the {device} device took longer than {timeout_s:.0f} s") from None
    if proc.returncode == 3:
        raise TargetUnavailable(proc.stderr.strip().splitlines()[-1])
    if proc.returncode != 0:
        raise RuntimeError(f"probing the {device} device failed:\n{proc.stderr[-4000:]}")
    return Target.model_validate_json(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("auto", "cpu", "cuda"):
        print("usage: python -m evaluator.targets.detect auto|cpu|cuda", file=sys.stderr)
        return 2
    try:
        target = detect_target(argv[0])
    except TargetUnavailable as exc:
        print(str(exc), file=sys.stderr)
        return 3
    print(json.dumps(target.model_dump(mode="json")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
