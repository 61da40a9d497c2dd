"""A throw-away cgroup per sandboxed run: kernel-enforced process and memory limits.

Why cgroups and not only rlimits: the worker usually runs as root, and the kernel exempts root
(and any uid mapped to it, as bubblewrap does) from RLIMIT_NPROC, so a fork bomb would exhaust
the machine's pid space (32768 here) before any poll noticed. A cgroup's `pids.max` stops it at
`fork()`. Its memory limit also covers host memory of GPU runs, where RLIMIT_AS cannot be used
(CUDA reserves terabytes of virtual address space).

Both cgroup v1 (one hierarchy per controller, as on this CI machine) and v2 (unified) are
supported. When neither is writable, `RunCgroup.create` returns None and the sandbox falls back
to polling the process tree (see sandbox.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")


def _own_path(controller: str) -> str:
    """This process's cgroup path for `controller` ('' for the v2 hierarchy)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return "/"
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") or (controller == "" and controllers == ""):
            return path or "/"
    return "/"


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


def _make_child(parent: Path, name: str) -> Path | None:
    child = parent / name
    try:
        child.mkdir()
    except OSError:
        return None
    return child


class RunCgroup:
    """One cgroup (v2) or a pair of cgroups (v1 pids + memory) holding one run's processes."""

    def __init__(self, dirs: list[Path], *, v2: bool, memory_dir: Path | None, pids_dir: Path) -> None:
        self.dirs = dirs
        self.v2 = v2
        self.memory_dir = memory_dir
        self.pids_dir = pids_dir

    @classmethod
    def create(cls, *, pids_max: int, memory_bytes: int | None) -> RunCgroup | None:
        """Make the cgroup(s) and set the limits; None when cgroups cannot be used here."""
        name = f"kjudge-{uuid.uuid4().hex[:12]}"
        if (_ROOT / "cgroup.controllers").exists():
            return cls._create_v2(name, pids_max, memory_bytes)
        return cls._create_v1(name, pids_max, memory_bytes)

    @classmethod
    def _create_v1(cls, name: str, pids_max: int, memory_bytes: int | None) -> RunCgroup | None:
        pids_root = _ROOT / "pids"
        if not (pids_root / "cgroup.procs").exists():
            return None
        pids_dir = _make_child(pids_root / _own_path("pids").lstrip("/"), name)
        if pids_dir is None or not _write(pids_dir / "pids.max", str(pids_max)):
            if pids_dir is not None:
                _rmdir(pids_dir)
            return None
        dirs = [pids_dir]
        memory_dir = None
        if memory_bytes is not None:
            mem_root = _ROOT / "memory"
            memory_dir = _make_child(mem_root / _own_path("memory").lstrip("/"), name)
            if memory_dir is None or not _write(memory_dir / "memory.limit_in_bytes", str(memory_bytes)):
                # Without a memory cgroup the sandbox still polls RSS; keep the pids limit.
                if memory_dir is not None:
                    _rmdir(memory_dir)
                memory_dir = None
            else:
                # No swap here, but where there is, stop the run from paging out instead.
                _write(memory_dir / "memory.memsw.limit_in_bytes", str(memory_bytes))
                dirs.append(memory_dir)
        return cls(dirs, v2=False, memory_dir=memory_dir, pids_dir=pids_dir)

    @classmethod
    def _create_v2(cls, name: str, pids_max: int, memory_bytes: int | None) -> RunCgroup | None:
        parent = _ROOT / _own_path("").lstrip("/")
        # Only succeeds in the root cgroup or a delegated one; harmless when it fails.
        _write(parent / "cgroup.subtree_control", "+pids +memory")
        child = _make_child(parent, name)
        if child is None:
            return None
        if not _write(child / "pids.max", str(pids_max)):
            _rmdir(child)
            return None
        memory_dir = None
        if memory_bytes is not None and _write(child / "memory.max", str(memory_bytes)):
            _write(child / "memory.swap.max", "0")
            memory_dir = child
        return cls([child], v2=True, memory_dir=memory_dir, pids_dir=child)

    def open_procs_fds(self) -> list[int]:
        """Descriptors the child writes "0" into (before exec) to join every cgroup atomically."""
        return [os.open(d / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for d in self.dirs]

    @property
    def has_memory_limit(self) -> bool:
        return self.memory_dir is not None

    def memory_oom_killed(self) -> bool:
        if self.memory_dir is None:
            return False
        if self.v2:
            return _counter(self.memory_dir / "memory.events", "oom_kill") > 0
        oom = _counter(self.memory_dir / "memory.oom_control", "oom_kill")
        if oom >= 0:
            return oom > 0
        # Older kernels have no oom_kill counter: having hit the limit at all is the best signal.
        return _read_int(self.memory_dir / "memory.failcnt") > 0

    def pids_limit_hit(self) -> bool:
        return _counter(self.pids_dir / "pids.events", "max") > 0

    def procs(self) -> list[int]:
        try:
            text = (self.pids_dir / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def kill_all(self) -> None:
        """SIGKILL everything left in the cgroup (a candidate may have escaped its session)."""
        if self.v2 and _write(self.pids_dir / "cgroup.kill", "1"):
            return
        for _ in range(50):
            pids = self.procs()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs:
            _rmdir(d)


def _rmdir(d: Path) -> None:
    # A cgroup can be removed only once its last process is reaped; retry briefly.
    for _ in range(100):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _counter(path: Path, key: str) -> int:
    """Value of `key` in a flat-keyed cgroup file; -1 when the key is absent."""
    try:
        for line in path.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
    except (OSError, ValueError):
        return 0
    return -1
