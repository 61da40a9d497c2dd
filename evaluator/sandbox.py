"""Running untrusted candidate code in a child process with limits.

INTERIM version: a plain child process in its own process group with rlimits and a wall-clock
limit. The bubblewrap hardening (no network, read-only filesystem, scrubbed env, GPU nodes
only) replaces the body of `run_sandboxed`; its signature is the contract (docs/internals.md).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel


class Limits(BaseModel):
    wall_s: float = 600.0
    cpu_s: int = 1200
    memory_bytes: int | None = None  # address-space limit; None on GPU (CUDA maps huge VA ranges)
    file_bytes: int = 2 << 30
    nproc: int = 4096
    output_bytes: int = 1 << 20  # stdout/stderr kept (tail) per stream


class SandboxRun(BaseModel):
    returncode: int | None
    signal: int | None = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0


def _tail(data: bytes, limit: int) -> str:
    if len(data) > limit:
        data = b"[... output truncated ...]\n" + data[-limit:]
    return data.decode("utf-8", errors="replace")


def _set_limits(limits: Limits) -> None:
    os.setsid()
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    if limits.memory_bytes is not None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))


def run_sandboxed(
    argv: Sequence[str],
    *,
    scratch: Path,
    limits: Limits,
    gpu: bool,
    env: dict[str, str],
    readonly_paths: Sequence[Path] = (),
    writable_paths: Sequence[Path] = (),
) -> SandboxRun:
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=scratch,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: _set_limits(limits),
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    rc = proc.returncode
    return SandboxRun(
        returncode=rc,
        signal=-rc if rc is not None and rc < 0 else None,
        timed_out=timed_out,
        stdout=_tail(out, limits.output_bytes),
        stderr=_tail(err, limits.output_bytes),
        wall_s=time.monotonic() - start,
    )
