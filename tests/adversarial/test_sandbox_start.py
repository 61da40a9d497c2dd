"""`start_sandboxed` / `SandboxProcess`: a sandbox started ahead of its job (a spare run child).

The command waits on its stdin; `release` hands it a line and starts the wall clock; `discard`
kills the whole sandbox. `run_sandboxed` (start + release(b"") + finish) is covered by
test_sandbox.py.
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from pathlib import Path

import pytest

from evaluator import sandbox, sandbox_bwrap
from evaluator.sandbox import Limits, SandboxProcess, SandboxRun, start_sandboxed

pytestmark = pytest.mark.skipif(not sandbox_bwrap.probe().available, reason="bubblewrap unusable here")

# Writes `started`, blocks on one line of stdin, writes what it read to `released`.
WAITER = """
import sys, time
open("started", "w").close()
line = sys.stdin.readline()
open("released", "w").write(line)
time.sleep(float(sys.argv[1]))
print("done")
"""


def _start(scratch: Path, code: str, *args: str, wall_s: float = 30.0) -> SandboxProcess:
    started = start_sandboxed(
        [sys.executable, "-c", code, *args],
        scratch=scratch,
        limits=Limits(wall_s=wall_s, memory_bytes=2 << 30),
        gpu=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(scratch)},
    )
    assert isinstance(started, SandboxProcess), started
    return started


def _wait_for(path: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _processes_with(token: str) -> list[int]:
    """Host pids whose command line contains `token`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    if token.encode() in f.read():
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_waits_for_release_and_reads_its_line(tmp_path: Path) -> None:
    proc = _start(tmp_path, WAITER, "0")
    _wait_for(tmp_path / "started")
    assert proc.alive() and not (tmp_path / "released").exists()
    proc.release(b"go job-1\n")
    run = proc.finish()
    assert run.returncode == 0 and run.stdout.strip() == "done", run
    assert (tmp_path / "released").read_text() == "go job-1\n"


def test_wall_clock_counts_from_release(tmp_path: Path) -> None:
    # Held well past its 2 s limit before the release, then 0.3 s of work: only a clock started
    # at the release lets it finish (one started at the spawn kills it at the first poll).
    proc = _start(tmp_path, WAITER, "0.3", wall_s=2.0)
    _wait_for(tmp_path / "started")
    time.sleep(3.0)
    assert proc.alive()
    proc.release(b"go\n")
    run = proc.finish()
    assert not run.timed_out and run.killed_reason is None and run.returncode == 0, run


def test_limit_still_applies_after_release(tmp_path: Path) -> None:
    proc = _start(tmp_path, WAITER, "600", wall_s=1.0)
    proc.release(b"go\n")
    run = proc.finish()
    assert run.timed_out and run.killed_reason == sandbox.WALL_CLOCK, run


def test_discard_kills_the_whole_sandbox(tmp_path: Path) -> None:
    token = f"kjudge-spare-{secrets.token_hex(6)}"
    # A detached grandchild in a session of its own must go too, and the command never runs on.
    code = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid(); time.sleep(600)\n"
        "open('started', 'w').close()\n"
        "sys.stdin.readline()\n"
        "open('released', 'w').close()\n"
    )
    proc = _start(tmp_path, code, token)
    _wait_for(tmp_path / "started")
    assert len(_processes_with(token)) >= 3  # bwrap, the command, its grandchild
    proc.discard()
    assert not proc.alive()
    # SIGKILL reaches the sandbox's inner processes asynchronously (bwrap's death signal).
    deadline = time.monotonic() + 30
    while _processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(token) == []
    assert not (tmp_path / "released").exists()
    proc.discard()  # idempotent


def test_refused_without_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_bwrap, "probe", lambda: sandbox_bwrap.Probe(False, False, "no bwrap"))
    monkeypatch.delenv(sandbox.UNSAFE_ENV, raising=False)
    started = start_sandboxed(
        [sys.executable, "-c", "open('ran', 'w').close()"],
        scratch=tmp_path,
        limits=Limits(wall_s=30),
        gpu=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert isinstance(started, SandboxRun) and started.refused and "no bwrap" in started.refused
    assert not (tmp_path / "ran").exists()
