"""Host-side attacks against `run_sandboxed` itself (no evaluator in between).

Each test runs a real attack script in the sandbox, asserts the outcome, and then checks that an
ordinary run on the same worker still works (`_healthy`). The end-to-end versions through
`evaluator.api.evaluate` are in test_attacks.py.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from evaluator import sandbox, sandbox_bwrap
from evaluator.sandbox import Limits, SandboxRun, run_sandboxed

pytestmark = pytest.mark.skipif(not sandbox_bwrap.probe().available, reason="bubblewrap unusable here")

CANARY = "kjudge-canary-3f9a1c"


def _run(tmp_path: Path, code: str, **limits: object) -> SandboxRun:
    scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=tmp_path))  # fresh per run
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(scratch),
        "KJUDGE_DATABASE_URL": f"postgresql://u:{CANARY}@db/x",
    }
    return run_sandboxed(
        [sys.executable, "-c", code],
        scratch=scratch,
        limits=Limits(**{"wall_s": 30.0, "memory_bytes": 2 << 30, **limits}),
        gpu=False,
        env=env,
    )


def _healthy(tmp_path: Path) -> None:
    run = _run(tmp_path, "print(6 * 7)")
    assert run.returncode == 0 and run.stdout.strip() == "42", run


def test_argv_binds_only_what_is_needed(tmp_path: Path) -> None:
    argv = sandbox_bwrap.build_argv(
        ["true"],
        scratch=tmp_path,
        gpu=False,
        readonly_paths=[],
        writable_paths=[],
        tmp_bytes=1 << 20,
        userns=True,
        passwd_fd=3,
        group_fd=4,
    )
    pairs = {(argv[i], argv[i + 1]) for i in range(len(argv) - 1)}
    assert ("--ro-bind", "/") not in pairs and ("--bind", "/") not in pairs
    for secret in ("/etc/shadow", "/root", "/home", "/tmp"):
        assert ("--ro-bind", secret) not in pairs and ("--bind", secret) not in pairs
    assert ("--bind", str(tmp_path.resolve())) in pairs
    assert "--unshare-all" in argv and "--die-with-parent" in argv and "--disable-userns" in argv
    assert not any(a.startswith("/dev/nvidia") for a in argv)
    # Binds after the /tmp tmpfs, so that a scratch dir under /tmp is not hidden by it.
    assert argv.index("/tmp") < argv.index(str(tmp_path.resolve()))


def test_network_is_unreachable(tmp_path: Path) -> None:
    # A real listener on the host's loopback: the sandbox must not reach it (nor anything else).
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    code = f"""
import socket
for host, port in [("127.0.0.1", {port}), ("127.0.0.1", 5432), ("127.0.0.1", 6379), ("1.1.1.1", 80)]:
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); print("CONNECTED", host, port)
    except OSError as e:
        print("blocked", host, port, e.errno)
"""
    try:
        run = _run(tmp_path, code)
    finally:
        server.close()
    assert run.returncode == 0, run.stderr
    assert "CONNECTED" not in run.stdout and run.stdout.count("blocked") == 4
    _healthy(tmp_path)


def test_secrets_are_invisible(tmp_path: Path) -> None:
    os.environ["KJUDGE_TEST_CANARY"] = CANARY  # in the worker's own environment
    try:
        code = f"""
import os, glob
found = []
for p in ["/etc/shadow", "/etc/gshadow", "/root/.ssh", os.path.expanduser("~/.ssh"), "{Path.home() / ".ssh"}",
          "/etc/postgresql", "/etc/redis", "/etc/ssh", "/var/lib/postgresql", "/work/main/.git"]:
    if os.path.exists(p): found.append(p)
found += [k for k, v in os.environ.items() if "{CANARY}" in v]
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if b"{CANARY}" in open(f"/proc/{{pid}}/environ", "rb").read(): found.append("environ of " + pid)
        except OSError: pass
print("FOUND", found)
print(open("/etc/passwd").read())
"""
        run = _run(tmp_path, code)
    finally:
        del os.environ["KJUDGE_TEST_CANARY"]
    assert run.returncode == 0, run.stderr
    assert "FOUND []" in run.stdout, run.stdout
    assert CANARY not in run.stdout + run.stderr
    assert "root:x:0:0" in run.stdout and "/bin/bash" not in run.stdout  # synthetic passwd
    _healthy(tmp_path)


def test_other_runs_scratch_is_invisible(tmp_path: Path) -> None:
    other = tmp_path / "other-submission"
    other.mkdir()
    (other / "solution.py").write_text(CANARY)
    code = f"import os; print(os.path.exists({str(other)!r}), os.listdir({str(tmp_path)!r}))"
    run = _run(tmp_path, code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("False") and "other-submission" not in run.stdout


def test_writes_outside_scratch_fail(tmp_path: Path) -> None:
    import evaluator

    pkg = Path(evaluator.__path__[0])
    code = f"""
import os
ok = []
for p in ["/usr/pwned", "/etc/pwned", "{pkg}/pwned.py", "{sys.prefix}/pwned", "/pwned", "/sys/pwned"]:
    try:
        open(p, "w").write("x"); ok.append(p)
    except OSError:
        pass
open("in_scratch.txt", "w").write("fine")
open("/tmp/in_tmp.txt", "w").write("fine")
print("WROTE", ok)
"""
    run = _run(tmp_path, code)
    assert run.returncode == 0, run.stderr
    assert "WROTE []" in run.stdout
    assert [p.read_text() for p in tmp_path.glob("scratch-*/in_scratch.txt")] == ["fine"]
    assert not (pkg / "pwned.py").exists()


def test_fork_bomb_is_contained(tmp_path: Path) -> None:
    run = _run(tmp_path, "import os\nwhile True:\n    os.fork()", nproc=64, wall_s=20)
    assert run.killed_reason in (sandbox.PROCESS_LIMIT, sandbox.WALL_CLOCK), run
    assert run.returncode != 0
    _healthy(tmp_path)


def test_memory_bomb_is_killed(tmp_path: Path) -> None:
    code = "x = []\nwhile True:\n    x.append(bytearray(64 << 20))"
    run = _run(tmp_path, code, memory_bytes=512 << 20)
    assert run.returncode != 0
    assert run.killed_reason == sandbox.MEMORY_LIMIT or "MemoryError" in run.stderr, run
    _healthy(tmp_path)


def test_memory_bomb_on_gpu_style_limits(tmp_path: Path) -> None:
    # gpu=True runs have no RLIMIT_AS: the cgroup (or RSS polling) must stop the bomb.
    scratch = tmp_path / "s"
    scratch.mkdir()
    code = "x = []\nwhile True:\n    x.append(bytearray(64 << 20))"
    run = run_sandboxed(
        [sys.executable, "-c", code],
        scratch=scratch,
        limits=Limits(wall_s=60, memory_bytes=512 << 20),
        gpu=True,
        env={"PATH": "/usr/bin"},
    )
    assert run.killed_reason == sandbox.MEMORY_LIMIT, run
    _healthy(tmp_path)


def test_disk_bomb_is_killed(tmp_path: Path) -> None:
    code = "f = open('big', 'wb')\nwhile True:\n    f.write(b'x' * (1 << 20))"
    run = _run(tmp_path, code, disk_bytes=64 << 20, file_bytes=1 << 40)
    assert run.killed_reason == sandbox.DISK_LIMIT, run
    many = "i = 0\nwhile True:\n    open(f'f{i}', 'w').close(); i += 1"
    run = _run(tmp_path, many, max_files=2000)
    assert run.killed_reason == sandbox.DISK_LIMIT, run
    tmp_bomb = "f = open('/tmp/big', 'wb')\nwhile True:\n    f.write(b'x' * (1 << 20))"
    run = _run(tmp_path, tmp_bomb, disk_bytes=64 << 20, file_bytes=1 << 40)
    assert run.returncode != 0 and "No space left" in run.stderr, run
    big_file = "f = open('big2', 'wb')\nwhile True:\n    f.write(b'x' * (1 << 20))"
    run = _run(tmp_path, big_file, file_bytes=16 << 20)
    assert run.returncode != 0 and ("File too large" in run.stderr or run.signal == signal.SIGXFSZ), run
    _healthy(tmp_path)


def test_output_flood_is_capped(tmp_path: Path) -> None:
    code = "import sys\nwhile True:\n    sys.stdout.write('A' * 65536); sys.stderr.write('B' * 65536)"
    run = _run(tmp_path, code, output_bytes=64 << 10, output_kill_bytes=8 << 20)
    assert run.killed_reason == sandbox.OUTPUT_LIMIT, run
    assert len(run.stdout) < 80_000 and len(run.stderr) < 80_000
    assert "bytes omitted" in run.stdout
    _healthy(tmp_path)


def test_sleep_past_deadline_times_out(tmp_path: Path) -> None:
    # The child also forks a detached grandchild: the whole sandbox must go, not just the child.
    code = "import os, time\nif os.fork() == 0:\n    os.setsid(); time.sleep(600)\ntime.sleep(600)"
    run = _run(tmp_path, code, wall_s=2)
    assert run.timed_out and run.killed_reason == sandbox.WALL_CLOCK
    assert run.wall_s < 10
    _healthy(tmp_path)


def test_cpu_time_limit(tmp_path: Path) -> None:
    run = _run(tmp_path, "while True: pass", cpu_s=1)
    assert run.killed_reason == sandbox.CPU_LIMIT and run.returncode != 0, run


def test_killing_or_tracing_the_parent_fails(tmp_path: Path) -> None:
    code = """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
ppid = os.getppid()
for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):
    for pid in (ppid, 1):
        try: os.kill(pid, sig)
        except OSError: pass
r = libc.ptrace(16, ppid, None, None)  # PTRACE_ATTACH
print("ptrace", r, ctypes.get_errno())
try: os.kill(-1, signal.SIGKILL)  # everything it may signal: only its own sandbox
except OSError: pass
print("still here")
"""
    worker_pid = os.getpid()
    run = _run(tmp_path, code)
    assert os.getpid() == worker_pid  # we (the worker) were not touched
    assert "ptrace -1" in run.stdout or run.returncode != 0, run
    _healthy(tmp_path)


def test_process_count_limit_from_threads(tmp_path: Path) -> None:
    code = "import threading, time\nfor _ in range(10000):\n    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()"
    run = _run(tmp_path, code, nproc=128, wall_s=20)
    assert run.returncode != 0, run
    _healthy(tmp_path)


def test_refuses_without_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_bwrap, "probe", lambda: sandbox_bwrap.Probe(False, False, "no bwrap"))
    monkeypatch.delenv(sandbox.UNSAFE_ENV, raising=False)
    marker = tmp_path / "ran"
    run = _run(tmp_path, f"open({str(marker)!r}, 'w')")
    assert run.refused and "no bwrap" in run.refused and sandbox.UNSAFE_ENV in run.refused
    assert not marker.exists()
    # The explicit, loudly named opt-out runs it with the limits but without namespaces.
    monkeypatch.setenv(sandbox.UNSAFE_ENV, "1")
    run = _run(tmp_path, "import time; time.sleep(60)", wall_s=1)
    assert run.refused is None and not run.sandboxed and run.timed_out


def test_scrub_env_drops_secret_like_variables() -> None:
    env = {
        "PATH": "/usr/bin",
        "KJUDGE_DATABASE_URL": "postgresql://x@db/y",
        "CELERY_BROKER_URL": "redis://h:6379/0",
        "MY_TOKEN": "t",
        "OTHER": "https://user:pw@host/",
        "CUDA_VISIBLE_DEVICES": "0",
    }
    assert sandbox.scrub_env(env) == {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0"}


def test_concurrent_runs_are_isolated(tmp_path: Path) -> None:
    # Two sandboxes at once (two GPU workers on one host): each sees only its own scratch.
    results: list[SandboxRun] = []

    def one(i: int) -> None:
        d = tmp_path / f"w{i}"
        d.mkdir()
        (d / "mine").write_text(str(i))
        code = f"import os; print(sorted(os.listdir('/tmp')), open('mine').read(), os.path.exists({str(tmp_path / f'w{1 - i}')!r}))"
        results.append(
            run_sandboxed(
                [sys.executable, "-c", code],
                scratch=d,
                limits=Limits(wall_s=30),
                gpu=False,
                env={"PATH": "/usr/bin"},
            )
        )

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.returncode == 0 and r.stdout.strip().endswith("False") for r in results), results


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a GPU")
def test_gpu_visible_only_when_asked(tmp_path: Path) -> None:
    # torch.cuda.is_available() in this (the worker's) process initialized nothing the child needs.
    code = "import torch, os; print(torch.cuda.is_available(), sorted(d for d in os.listdir('/dev') if 'nvidia' in d or d in ('kfd', 'dri')))"
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")}
    with_gpu = run_sandboxed(
        [sys.executable, "-c", code], scratch=tmp_path, limits=Limits(wall_s=120), gpu=True, env=env
    )
    assert with_gpu.returncode == 0 and with_gpu.stdout.startswith("True"), with_gpu
    without = run_sandboxed(
        [sys.executable, "-c", code], scratch=tmp_path, limits=Limits(wall_s=120), gpu=False, env=env
    )
    assert without.returncode == 0 and without.stdout.startswith("False []"), without
