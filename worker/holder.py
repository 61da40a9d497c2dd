"""Who holds a claim, and whether that process still exists.

A claim records its holder as `pidns:pid:start` — the pid namespace's inode, the pid, and the
process's start time in clock ticks since boot (/proc/PID/stat field 22). A worker on the same
host (same hostname in the worker id) and in the same pid namespace can then tell for certain
that the holder is gone: no process with that pid, or one with another start time (the pid was
reused). In another pid namespace (another container sharing the hostname) it cannot tell and
says "alive", leaving the claim to the lease. This turns "wait for the lease to run out" into
"recovered as soon as the host's worker restarts" for the common crash: the worker process (or
its pool process) killed and restarted by its supervisor.
"""

from __future__ import annotations

import os
from functools import lru_cache


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def _start_ticks(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    # The command name may hold spaces and ')'; field 22 (starttime) counts from the last ')'.
    return stat.rsplit(")", 1)[1].split()[19]


@lru_cache(maxsize=1)
def _namespace() -> str:
    return _pid_namespace()


def current() -> str:
    """This process's holder string (computed per call: a forked pool process has its own pid)."""
    pid = os.getpid()
    return f"{_namespace()}:{pid}:{_start_ticks(pid) or 0}"


def is_dead(holder: str | None) -> bool:
    """True only when the holder certainly no longer runs (same pid namespace, checked)."""
    if not holder:
        return False
    parts = holder.split(":")
    if len(parts) != 3 or not parts[1].isdigit():
        return False
    namespace, pid, start = parts
    if namespace != _namespace():
        return False
    return _start_ticks(int(pid)) != start
