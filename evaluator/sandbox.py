"""Running untrusted candidate code (compile or run step) in a bubblewrap sandbox with limits.

Layers, each covering what the others cannot:
- bubblewrap (sandbox_bwrap.py): no network, private pid/ipc/uts namespaces, read-only
  filesystem except scratch, no capabilities, only the GPU's device nodes.
- rlimits on the child: CPU seconds, file size, core dumps off, processes (only effective when
  the worker is not root), address space on CPU-only runs.
- a cgroup per run when the machine allows it (sandbox_cgroup.py): `pids.max` and a memory
  limit enforced by the kernel even for root.
- this module's watchdog: wall clock, output volume (pipes are read incrementally; head and tail
  kept, killed beyond a hard cap), disk used in the writable dirs, and — where no cgroup is
  available — the process count and resident memory of the whole tree.
A kill takes the whole sandbox: bwrap's pid-namespace init dies, the kernel kills the rest.

`run_sandboxed` runs a command to its end. `start_sandboxed` splits that in two for a spare run
child (evaluator/spares.py): the sandbox is made and the command started, but the watchdog's
wall clock starts only at `SandboxProcess.release`, which hands the command its go line on stdin.

If bubblewrap cannot be used, untrusted code is refused (`SandboxRun.refused` says why, callers
turn it into verdict `rejected`) unless the operator opted out with `KJUDGE_UNSAFE_NO_SANDBOX=1`
or `unsafe_no_sandbox=True`; then the same limits apply without the namespaces.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ParamSpec

from pydantic import BaseModel

from evaluator import sandbox_bwrap
from evaluator.sandbox_cgroup import RunCgroup

UNSAFE_ENV = "KJUDGE_UNSAFE_NO_SANDBOX"
EXTRA_RO_ENV = "KJUDGE_SANDBOX_EXTRA_RO"  # operator-added read-only paths, ':'-separated
MEMORY_ENV = "KJUDGE_SANDBOX_MEMORY_BYTES"  # default host-memory cap per sandbox

# Reasons a run was killed by the sandbox (SandboxRun.killed_reason).
WALL_CLOCK = "wall_clock"
OUTPUT_LIMIT = "output_limit"
MEMORY_LIMIT = "memory_limit"
PROCESS_LIMIT = "process_limit"
DISK_LIMIT = "disk_limit"
CPU_LIMIT = "cpu_limit"

P = ParamSpec("P")

_POLL_S = 0.05
_TREE_POLL_S = 0.1
_DISK_POLL_S = 0.5


class Limits(BaseModel):
    wall_s: float = 600.0
    cpu_s: int = 1200
    # Host memory. RLIMIT_AS only on CPU runs (CUDA maps huge VA ranges); a cgroup or RSS polling
    # for all. None: half the machine's RAM (default_memory_bytes).
    memory_bytes: int | None = None
    file_bytes: int = 2 << 30
    # Processes + threads of the whole sandbox (a cgroup counts threads). Torch, CUDA and a parallel
    # compile stay far below; a fork bomb hits it in milliseconds instead of starving the CPU.
    nproc: int = 512
    output_bytes: int = 1 << 20  # stdout/stderr kept per stream (head + tail)
    output_kill_bytes: int = 64 << 20  # stdout+stderr beyond this: killed as a flood
    disk_bytes: int = 4 << 30  # scratch + writable dirs, and the size of /tmp and /dev/shm
    max_files: int = 100_000  # files in scratch + writable dirs


class SandboxRun(BaseModel):
    returncode: int | None
    signal: int | None = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0
    killed_reason: str | None = None  # one of the *_LIMIT / WALL_CLOCK names above
    sandboxed: bool = True  # False only when the operator opted out of bubblewrap
    refused: str | None = None  # set when nothing ran because no sandbox could be made


# Defence in depth: the caller passes a scrubbed env, but a variable that looks like a secret
# never reaches a candidate even if a caller slips.
_SECRET_NAME = re.compile(
    r"(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE|CREDENTIAL|DATABASE_URL|BROKER_URL|"
    r"REDIS_URL|POSTGRES|PGPASS|AWS_|GCP_|AZURE_|SSH_AUTH)",
    re.IGNORECASE,
)
_URL_WITH_CREDENTIALS = re.compile(r"://[^/\s]*:[^/\s]*@")


def scrub_env(env: dict[str, str]) -> dict[str, str]:
    return {
        k: v for k, v in env.items() if not _SECRET_NAME.search(k) and not _URL_WITH_CREDENTIALS.search(v)
    }


def unsafe_opt_out() -> bool:
    return os.environ.get(UNSAFE_ENV, "") not in ("", "0", "false", "no")


def default_memory_bytes() -> int:
    """The cap applied when a caller sets no memory limit: `KJUDGE_SANDBOX_MEMORY_BYTES` (the
    operator's per-worker setting) or else half the machine's RAM."""
    configured = os.environ.get(MEMORY_ENV, "").strip()
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def sandbox_status() -> sandbox_bwrap.Probe:
    """Whether bubblewrap works here (probed once per process)."""
    return sandbox_bwrap.probe()


def describe(run: SandboxRun, limits: Limits) -> str | None:
    """One line for the author when the sandbox stopped the run; None otherwise."""
    mib = 1 << 20
    match run.killed_reason:
        case None:
            if run.signal == signal.SIGXCPU:
                return f"killed: used more than {limits.cpu_s} s of CPU time"
            if run.signal == signal.SIGXFSZ:
                return f"killed: wrote a file larger than {limits.file_bytes // mib} MiB"
            return None
        case "wall_clock":
            return f"killed: still running after the {limits.wall_s:g} s wall-clock limit"
        case "output_limit":
            return f"killed: wrote more than {limits.output_kill_bytes // mib} MiB to stdout/stderr"
        case "memory_limit":
            return f"killed: used more than {(limits.memory_bytes or 0) // mib} MiB of host memory"
        case "process_limit":
            return f"killed: started more than {limits.nproc} processes/threads"
        case "disk_limit":
            return (
                f"killed: wrote more than {limits.disk_bytes // mib} MiB or {limits.max_files} files to disk"
            )
        case "cpu_limit":
            return f"killed: used more than {limits.cpu_s} s of CPU time"
    return f"killed by the sandbox ({run.killed_reason})"


class _Capture:
    """Keeps the head and the tail of a stream; counts everything."""

    def __init__(self, keep: int) -> None:
        self.head_limit = min(64 << 10, keep // 4)
        self.tail_limit = keep - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        tail = bytes(self.tail[-self.tail_limit :]) if self.tail_limit else b""
        skipped = self.total - len(self.head) - len(tail)
        sep = f"\n[... {skipped} bytes omitted ...]\n".encode() if skipped > 0 else b""
        return (bytes(self.head) + sep + tail).decode("utf-8", errors="replace")


def _child_setup(
    limits: Limits, gpu: bool, cgroup_fds: list[int], cpus: frozenset[int] | None = None
) -> Callable[[], None]:
    # Runs between fork and exec: syscalls only (no locks, no imports).
    def setup() -> None:
        for fd in cgroup_fds:
            os.write(fd, b"0")
        if cpus:
            os.sched_setaffinity(0, cpus)
        # soft == hard: SIGKILL at the limit. A SIGXCPU would be ignored by the sandbox's pid 1.
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.nproc, limits.nproc))
        if limits.memory_bytes is not None and not gpu:
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

    return setup


def _proc_tree(root: int) -> tuple[int, int]:
    """(threads, resident bytes) of `root` and all its descendants, read from /proc."""
    members, info = _tree(root)
    threads = sum(info.get(p, (0, 0))[0] for p in members)
    rss = sum(info.get(p, (0, 0))[1] for p in members)
    return threads, rss


def pin_tree(root: int, cpus: set[int]) -> int:
    """Move every thread of `root` and its descendants onto `cpus`; returns how many moved
    (threads that ended meanwhile, or that this process may not move, are skipped)."""
    moved = 0
    for pid in _tree(root)[0]:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
        for tid in tids:
            try:
                os.sched_setaffinity(tid, cpus)
                moved += 1
            except OSError:
                continue
    return moved


def _tree(root: int) -> tuple[set[int], dict[int, tuple[int, int]]]:
    """`root` and its descendants, and (threads, resident bytes) of every process, from /proc."""
    parent: dict[int, int] = {}
    info: dict[int, tuple[int, int]] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parent[pid] = int(stat[1])
        info[pid] = (int(stat[17]), int(stat[21]) * page)  # num_threads, rss pages
    members = {root}
    changed = True
    while changed:
        changed = False
        for pid, ppid in parent.items():
            if ppid in members and pid not in members:
                members.add(pid)
                changed = True
    return members, info


def _disk_usage(dirs: Sequence[Path], max_files: int) -> tuple[int, int]:
    """(bytes, files) under `dirs`, stopping early past `max_files`."""
    total = files = 0
    stack = [str(d) for d in dirs]
    while stack and files <= max_files:
        top = stack.pop()
        try:
            with os.scandir(top) as it:
                for e in it:
                    files += 1
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        else:
                            total += e.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        continue
        except OSError:
            continue
    return total, files


def _exited(pid: int) -> bool:
    # WNOWAIT: look without reaping, so that _reap can still collect the tree's rusage.
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _reap(proc: subprocess.Popen[bytes]) -> float:
    """Wait for the child; return the CPU seconds of its whole (reaped) tree."""
    if proc.returncode is not None:  # already reaped by poll(): no rusage left to read
        return 0.0
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except ChildProcessError:
        proc.wait()
        return 0.0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def _data_fd(text: str) -> int:
    """A pipe's read end holding `text` (bwrap copies it into a file inside the sandbox)."""
    r, w = os.pipe()
    os.write(w, text.encode())
    os.close(w)
    return r


class SandboxProcess:
    """A started sandbox whose command has not been released yet (see `start_sandboxed`).

    Until `release`, nothing watches the clock: the command is trusted kjudge code waiting on its
    stdin (a spare run child importing torch). Every other limit is already in force (rlimits,
    cgroup, namespaces). Exactly one of `finish` or `discard` must end it.
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        limits: Limits,
        cgroup: RunCgroup | None,
        gpu: bool,
        disk_dirs: list[Path],
        sandboxed: bool,
    ) -> None:
        self._proc = proc
        self._limits = limits
        self._cgroup = cgroup
        self._gpu = gpu
        self._disk_dirs = disk_dirs
        self._sandboxed = sandboxed
        self._released_at: float | None = None
        self._ended = False

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return not self._ended and not _exited(self._proc.pid)

    def pin(self, cpus: set[int]) -> int:
        """Move the whole sandboxed tree onto `cpus` (threads it starts later inherit it)."""
        return pin_tree(self._proc.pid, cpus)

    def release(self, data: bytes = b"") -> None:
        """Hand `data` to the command's stdin and close it; the wall clock starts now. `data` must
        fit the pipe's buffer (64 KiB): the command is not read from while this writes."""
        if self._released_at is not None:
            raise RuntimeError("a sandboxed process is released once")
        self._released_at = time.monotonic()
        stdin = self._proc.stdin
        assert stdin is not None
        # A command that already died (it will be reported by finish) closed the pipe.
        with contextlib.suppress(BrokenPipeError, OSError):
            if data:
                stdin.write(data)
        with contextlib.suppress(BrokenPipeError, OSError):
            stdin.close()

    def finish(self) -> SandboxRun:
        """Watch the released command to its end (limits, output) and clean the sandbox up."""
        if self._released_at is None:
            raise RuntimeError("finish() before release()")
        self._ended = True
        try:
            return _watch(
                self._proc,
                self._released_at,
                self._limits,
                self._cgroup,
                self._gpu,
                self._disk_dirs,
                self._sandboxed,
            )
        finally:
            self._remove_cgroup()

    def discard(self) -> None:
        """Kill the whole sandbox and clean it up; nothing is reported."""
        if self._ended:
            return
        self._ended = True
        try:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            if self._cgroup is not None:
                self._cgroup.kill_all()
            _reap(self._proc)
            for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        finally:
            self._remove_cgroup()

    def _remove_cgroup(self) -> None:
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None


def start_sandboxed(
    argv: Sequence[str],
    *,
    scratch: Path,
    limits: Limits,
    gpu: bool,
    env: dict[str, str],
    readonly_paths: Sequence[Path] = (),
    writable_paths: Sequence[Path] = (),
    unsafe_no_sandbox: bool = False,
    cpus: Sequence[int] | None = None,
) -> SandboxProcess | SandboxRun:
    """Start `argv` in the sandbox (as `run_sandboxed` does) and return at once; on `cpus`
    when given (SandboxProcess.pin moves it later).

    The command's stdin is a pipe that `SandboxProcess.release` writes to and closes; the
    wall-clock limit counts from the release. Returns a `SandboxRun` instead when nothing runs:
    `refused` (no sandbox could be made and the operator did not opt out) or a failed start.
    """
    scratch = Path(scratch)
    probe = sandbox_bwrap.probe()
    use_bwrap = probe.available
    if not use_bwrap and not (unsafe_no_sandbox or unsafe_opt_out()):
        return SandboxRun(
            returncode=None,
            sandboxed=False,
            refused=(
                f"refused to run untrusted code without a sandbox: {probe.reason}. Install bubblewrap "
                f"and allow user namespaces, or set {UNSAFE_ENV}=1 to run unsandboxed (unsafe)."
            ),
        )
    env = scrub_env(env)
    if limits.memory_bytes is None:
        # No caller limit still must not let one candidate take the worker's machine down.
        limits = limits.model_copy(update={"memory_bytes": default_memory_bytes()})
    cgroup = RunCgroup.create(pids_max=limits.nproc, memory_bytes=limits.memory_bytes)
    fds: list[int] = []
    started = False
    try:
        cgroup_fds = cgroup.open_procs_fds() if cgroup else []
        fds += cgroup_fds
        if use_bwrap:
            passwd_fd, group_fd = _data_fd(sandbox_bwrap.PASSWD), _data_fd(sandbox_bwrap.GROUP)
            fds += [passwd_fd, group_fd]
            extra = [Path(p) for p in os.environ.get(EXTRA_RO_ENV, "").split(":") if p]
            command = sandbox_bwrap.build_argv(
                argv,
                scratch=scratch,
                gpu=gpu,
                readonly_paths=readonly_paths,
                writable_paths=writable_paths,
                tmp_bytes=limits.disk_bytes,
                userns=probe.userns,
                passwd_fd=passwd_fd,
                group_fd=group_fd,
                extra_readonly=[p for p in extra if p.exists()],
            )
            pass_fds: tuple[int, ...] = (passwd_fd, group_fd)
        else:
            command, pass_fds = list(argv), ()
        try:
            proc = subprocess.Popen(
                command,
                cwd=scratch,
                env=env,
                # A pipe, not /dev/null: release() writes the go line of a waiting child through
                # it. Closed right after, so a command that reads stdin gets EOF either way.
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=pass_fds,
                preexec_fn=_child_setup(limits, gpu, cgroup_fds, frozenset(cpus) if cpus else None),
            )
        except OSError as exc:
            return SandboxRun(returncode=None, stderr=f"could not start: {exc}", sandboxed=use_bwrap)
        started = True
        disk_dirs = [scratch, *map(Path, writable_paths)]
        return SandboxProcess(proc, limits, cgroup, gpu, disk_dirs, use_bwrap)
    finally:
        for fd in fds:
            os.close(fd)
        if not started and cgroup is not None:
            cgroup.remove()


def _to_completion(start: Callable[P, SandboxProcess | SandboxRun]) -> Callable[P, SandboxRun]:
    """`start`, released at once with an empty stdin, then watched to its end: the same
    parameters, so one signature serves both entry points."""

    def run(*args: P.args, **kwargs: P.kwargs) -> SandboxRun:
        started = start(*args, **kwargs)
        if isinstance(started, SandboxRun):
            return started
        started.release(b"")
        return started.finish()

    return run


run_sandboxed = _to_completion(start_sandboxed)
run_sandboxed.__doc__ = """Run `argv` in the sandbox with `scratch` as its writable working directory
(the parameters of `start_sandboxed`).

Never raises for anything the command does; `refused` is set (and nothing runs) when no
sandbox can be made and the operator did not opt out. Stdin is empty (EOF).
"""


def _watch(
    proc: subprocess.Popen[bytes],
    start: float,
    limits: Limits,
    cgroup: RunCgroup | None,
    gpu: bool,
    disk_dirs: list[Path],
    sandboxed: bool,
) -> SandboxRun:
    out, err = _Capture(limits.output_bytes), _Capture(limits.output_bytes)
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    for stream, cap in ((proc.stdout, out), (proc.stderr, err)):
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ, cap)
    killed: str | None = None
    next_tree = next_disk = 0.0

    def kill(reason: str) -> None:
        nonlocal killed
        killed = killed or reason
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if cgroup is not None:
            cgroup.kill_all()

    exited_at: float | None = None
    while sel.get_map():
        for key, _ in sel.select(timeout=_POLL_S):
            try:
                data = os.read(key.fd, 1 << 16)
            except BlockingIOError:
                continue
            if not data:
                sel.unregister(key.fileobj)
                continue
            key.data.add(data)
        now = time.monotonic()
        if killed is None:
            if out.total + err.total > limits.output_kill_bytes:
                kill(OUTPUT_LIMIT)
            elif now - start > limits.wall_s:
                kill(WALL_CLOCK)
            elif cgroup is not None and cgroup.pids_limit_hit():
                # A fork() already failed for lack of pids: nothing legitimate gets there, and a
                # bomb of heavy (torch-sized) processes would otherwise spin until the deadline.
                kill(PROCESS_LIMIT)
            elif now >= next_tree and (cgroup is None or not cgroup.has_memory_limit):
                next_tree = now + _TREE_POLL_S
                threads, rss = _proc_tree(proc.pid)
                if cgroup is None and threads > limits.nproc:
                    kill(PROCESS_LIMIT)
                elif limits.memory_bytes is not None and rss > limits.memory_bytes:
                    kill(MEMORY_LIMIT)
            if killed is None and now >= next_disk:
                next_disk = now + _DISK_POLL_S
                used, files = _disk_usage(disk_dirs, limits.max_files)
                if used > limits.disk_bytes or files > limits.max_files:
                    kill(DISK_LIMIT)
        if exited_at is None and _exited(proc.pid):
            exited_at = now
            # The sandbox is gone with bwrap; anything left (unsafe mode) must not hold the pipes.
            if cgroup is not None:
                cgroup.kill_all()
        if exited_at is not None and now - exited_at > 2.0:
            break  # a process that escaped the tree holds the pipes open: stop reading
    sel.close()
    cpu_s = _reap(proc)
    wall = time.monotonic() - start
    rc = proc.returncode
    assert rc is not None
    if sandboxed and 128 < rc < 128 + 65:
        # bwrap reports its child's death by signal N as exit status 128+N; report it the way
        # subprocess does for a direct child, so callers need not know bwrap is in between.
        rc = -(rc - 128)
    sig = -rc if rc < 0 else None
    if killed is None and cgroup is not None:
        if cgroup.memory_oom_killed():
            killed = MEMORY_LIMIT
        elif cgroup.pids_limit_hit() and rc != 0:
            killed = PROCESS_LIMIT
    if killed is None and sig in (signal.SIGXCPU, signal.SIGKILL) and cpu_s >= limits.cpu_s - 0.5:
        killed = CPU_LIMIT
    for stream in (proc.stdout, proc.stderr):
        stream.close()
    return SandboxRun(
        returncode=rc,
        signal=sig,
        timed_out=killed == WALL_CLOCK,
        stdout=out.text(),
        stderr=err.text(),
        wall_s=wall,
        killed_reason=killed,
        sandboxed=sandboxed,
    )
