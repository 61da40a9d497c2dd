"""Spare run children (evaluator/spares.py): the runner's --await-job mode, the pool's matching,
and end to end through `evaluate` on the cpu target."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evaluator import api, runner, sandbox, sandbox_bwrap
from evaluator.options import EvalOptions, Submission
from evaluator.problem import Problem
from evaluator.result import Backend, Target, Verdict
from evaluator.sandbox import Limits
from evaluator.spares import Spare, SpareConfig, SparePool, spawn
from tests.evaluator.conftest import EXAMPLES, ROOT
from worker.pipeline import parse_cpus

RELU = Problem.from_file(EXAMPLES / "problem.py")


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


# -- the runner ----------------------------------------------------------------------------------


def test_await_job_exits_quietly_on_eof(tmp_path: Path) -> None:
    # No job file exists: a spare that read one before its go line would fail here.
    job = tmp_path / "job.json"
    proc = subprocess.run(
        [sys.executable, "-m", "evaluator.runner", "--await-job", str(job), "--spawned-at", "0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_child_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert (tmp_path / runner.SPARE_READY).exists()  # it imported first
    assert sorted(p.name for p in tmp_path.iterdir()) == [runner.SPARE_READY]  # no report


def test_go_line_then_stdin_is_empty() -> None:
    # What the parent writes past the line never reaches the candidate, which runs in this process.
    code = "import sys\nfrom evaluator.runner import _read_go_line\nprint(_read_go_line(), repr(sys.stdin.read()))"
    proc = subprocess.run(
        [sys.executable, "-c", code], input=b"go\nEXTRA", capture_output=True, env=_child_env(), timeout=120
    )
    assert proc.stdout.decode().split() == ["True", "''"], proc.stderr


def test_usage() -> None:
    assert runner.main(["--await-job"]) == 2
    assert runner.main(["--await-job", "j.json", "--spawned-at", "soon"]) == 2


# -- the pool's matching (no processes) --------------------------------------------------------


@dataclass
class FakeProcess:
    alive_: bool = True
    released: list[bytes] = field(default_factory=list)
    discarded: bool = False

    def alive(self) -> bool:
        return self.alive_ and not self.discarded

    def release(self, data: bytes) -> None:
        self.released.append(data)

    def discard(self) -> None:
        self.discarded = True


def _config(tmp_path: Path, wall_s: float = 60.0) -> SpareConfig:
    return SpareConfig(
        python=sys.executable,
        gpu=False,
        backend=Backend.CPU,
        env={"HOME": "/kjudge-spare-scratch-placeholder", "PATH": "/usr/bin"},
        sandbox_env={},
        cache_dir=tmp_path / "cache",
        scratch_root=None,
        limits=Limits(wall_s=wall_s),
        writable_paths=(),
    )


def _fake_pool(tmp_path: Path) -> tuple[SparePool, list[Spare]]:
    spawned: list[Spare] = []

    def spawner(config: SpareConfig, cpus: object = None) -> Spare:
        scratch = tmp_path / f"spare{len(spawned)}"
        scratch.mkdir()
        spare = Spare(config, scratch, scratch / "job.json", FakeProcess(), 0.0)  # type: ignore[arg-type]
        spawned.append(spare)
        return spare

    return SparePool(spawner), spawned


def test_pool_serves_each_spare_once_and_only_a_matching_one(tmp_path: Path) -> None:
    pool, spawned = _fake_pool(tmp_path)
    config = _config(tmp_path)
    assert pool.claim(config) is None  # off by default: nothing claimed, nothing started
    pool.refill()
    assert spawned == []

    pool.enable(True)
    assert pool.claim(config) is None  # nothing waiting yet; the config is remembered
    pool.refill()
    assert len(spawned) == 1
    assert pool.claim(config) is spawned[0]
    assert pool.claim(config) is None  # never served twice

    pool.refill()
    assert pool.claim(_config(tmp_path, wall_s=5.0)) is None  # other limits: killed, not used
    assert spawned[1].process.discarded and not spawned[1].scratch.exists()  # type: ignore[attr-defined]

    pool.refill()  # for the last config asked for
    assert spawned[2].config == _config(tmp_path, wall_s=5.0)
    spawned[2].process.alive_ = False  # type: ignore[attr-defined]
    assert pool.claim(spawned[2].config) is None  # died while waiting: discarded

    pool.refill()
    pool.enable(False)
    assert spawned[3].process.discarded  # type: ignore[attr-defined]
    assert pool.stats.model_dump() == {
        "started": 4,
        "used": 1,
        "discarded": 3,
        "failed": 0,
        "last_error": None,
    }


def test_a_pool_keeps_its_size_and_serves_a_ready_spare_first(tmp_path: Path) -> None:
    pool, spawned = _fake_pool(tmp_path)
    config = _config(tmp_path)
    pool.enable(True, size=3)
    assert pool.claim(config) is None
    pool.refill()
    assert len(spawned) == 3 and pool.count() == 3
    spawned[1].job_path.with_name(runner.SPARE_READY).touch()  # the second finished importing first
    assert pool.claim(config) is spawned[1]
    assert pool.claim(config) is spawned[0]  # none ready: the oldest, the likeliest to be next
    pool.refill()
    assert len(spawned) == 5 and pool.count() == 3  # topped up, never past the size
    spawned[2].process.alive_ = False  # type: ignore[attr-defined]
    assert pool.claim(config) is spawned[3]  # the dead one is discarded on the way
    assert spawned[2].process.discarded  # type: ignore[attr-defined]
    pool.enable(False)
    assert all(s.process.discarded for s in (spawned[4],))  # type: ignore[attr-defined]
    assert pool.count() == 0


def _allowed_cpus(pid: int) -> set[int]:
    with open(f"/proc/{pid}/status") as f:
        line = next(x for x in f if x.startswith("Cpus_allowed_list:"))
    return set(parse_cpus(line.split(":", 1)[1].strip()))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores to move between")
@pytest.mark.skipif(not sandbox_bwrap.probe().available, reason="bubblewrap unusable here")
def test_a_spare_imports_on_its_cores_and_runs_on_the_claimers(tmp_path: Path) -> None:
    # Spares import on the compile cores; the one claimed is moved, whole sandbox and all its
    # threads, onto the run stage's cores before it gets the job.
    first, second = sorted(os.sched_getaffinity(0))[:2]
    config = api._spare_config(
        Target(backend=Backend.CPU, arch="x86_64", device="cpu"), tmp_path / "cache", tmp_path, Limits()
    )
    spare = spawn(config, cpus=[first])
    assert spare is not None
    try:
        deadline = time.monotonic() + 60
        while not spare.ready() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert spare.ready()
        tree = sandbox._tree(spare.process.pid)[0]
        assert len(tree) >= 2 and all(_allowed_cpus(p) == {first} for p in tree)
        assert spare.process.pin({second}) >= len(tree)
        assert all(_allowed_cpus(p) == {second} for p in sandbox._tree(spare.process.pid)[0])
    finally:
        spare.discard()


def test_a_forked_process_does_not_inherit_the_spare(tmp_path: Path) -> None:
    pool, spawned = _fake_pool(tmp_path)
    pool.enable(True)
    pool.claim(_config(tmp_path))
    pool.refill()
    assert pool.waiting() is spawned[0]
    pid = os.fork()
    if pid == 0:  # the spare is the parent's child: neither used nor killed here
        os._exit(0 if pool.waiting() is None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert pool.waiting() is spawned[0] and not spawned[0].process.discarded  # type: ignore[attr-defined]
    pool.enable(False)


def test_env_for_puts_the_spares_scratch_back(tmp_path: Path) -> None:
    config = api._spare_config(
        Target(backend=Backend.CPU, arch="x86_64", device="cpu"), tmp_path, None, Limits()
    )
    assert config.env_for(tmp_path / "s") == api.child_env(tmp_path / "s", tmp_path, Backend.CPU)


# -- end to end ----------------------------------------------------------------------------------


def _spare_processes() -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    cmdline = f.read()
            except OSError:
                continue
            if b"evaluator.runner\x00--await-job" in cmdline:
                found.append(int(entry.name))
    return found


def _gone(pids: list[int], timeout_s: float = 30.0) -> bool:
    # SIGKILL reaches the sandbox's inner processes asynchronously (bwrap's death signal).
    deadline = time.monotonic() + timeout_s
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if p in _spare_processes()]
        time.sleep(0.05)
    return not alive


@pytest.fixture
def spares() -> Iterator[SparePool]:
    api.enable_spares(True)
    try:
        yield api.SPARES
    finally:
        api.enable_spares(False)


def _evaluate(options: EvalOptions, kernel: str) -> dict[str, float]:
    result = api.evaluate(RELU, Submission.from_file(EXAMPLES / kernel), options)
    assert result.verdict == Verdict.CORRECT, result.model_dump_json(indent=1)
    return result.durations_s


@pytest.mark.skipif(not sandbox_bwrap.probe().available, reason="bubblewrap unusable here")
def test_evaluations_through_spares(cpu_options: EvalOptions, spares: SparePool) -> None:
    before = api.spare_stats()
    # The first native build changes the parent's sys.path (setuptools' vendored packages), hence
    # the child's PYTHONPATH: a spare started before it would not match. Build first.
    assert "spare_import" not in _evaluate(cpu_options, "relu_cpp.cpp")  # none was waiting
    waiting = spares.waiting()
    assert waiting is not None and waiting.process.alive()

    durations = _evaluate(cpu_options, "relu_triton.py")
    assert durations["spare_import"] > 0 and "process_start" in durations
    assert not waiting.scratch.exists() and not waiting.process.alive()  # served once, cleaned
    stats = api.spare_stats()
    assert (stats.used - before.used, stats.started - before.started) == (1, 2)

    # A native candidate: its module is copied into the spare's scratch (no bind for it exists).
    assert "spare_import" in _evaluate(cpu_options, "relu_cpp.cpp")
    assert api.spare_stats().used - before.used == 2

    # A spare that died while waiting is discarded; the evaluation runs a fresh child.
    waiting = spares.waiting()
    assert waiting is not None
    os.killpg(waiting.process.pid, signal.SIGKILL)
    assert _gone([waiting.process.pid])
    assert "spare_import" not in _evaluate(cpu_options, "relu_triton.py")
    assert api.spare_stats().discarded - before.discarded == 1

    # Off: the waiting spare is killed and nothing is left running.
    waiting = spares.waiting()
    assert waiting is not None and _spare_processes()
    api.enable_spares(False)
    assert _gone(_spare_processes()) and not waiting.scratch.exists()
    assert spares.waiting() is None and api.spare_stats().discarded - before.discarded == 2
