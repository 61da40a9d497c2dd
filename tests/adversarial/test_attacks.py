"""Host-side attacks end to end: each file in submissions/ through `evaluator.api.evaluate`,
with the verdict it must get, followed by an honest submission that must still be `correct`.

Device-side attacks (GPU kernels that hang, fault or exhaust memory) are at the bottom, marked
`gpu`; they need the lent GPU.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from evaluator import sandbox_bwrap
from evaluator.result import Language, Result, Verdict

api = pytest.importorskip("evaluator.api")
from evaluator.options import EvalOptions, Submission  # noqa: E402
from evaluator.problem import Problem  # noqa: E402

HERE = Path(__file__).parent
SUBMISSIONS = HERE / "submissions"
PROBLEM = Problem.from_file(HERE / "problem_relu.py")
CANARY = "kjudge-canary-6c1e0b"

pytestmark = pytest.mark.skipif(not sandbox_bwrap.probe().available, reason="bubblewrap unusable here")

# (file, verdicts it may get, wall-clock limit). A fork bomb of torch-sized processes needs ~20 s
# on a 2-core machine to hit the process limit (runtime_error); where forking is slower than the
# deadline the wall clock ends it (timeout). Either way it is contained.
HOST_ATTACKS = [
    ("net_socket.py", {Verdict.CORRECT}, 30),
    ("read_secrets.py", {Verdict.CORRECT}, 30),
    ("write_outside.py", {Verdict.CORRECT}, 30),
    ("kill_parent.py", {Verdict.CORRECT}, 30),
    ("fork_bomb.py", {Verdict.RUNTIME_ERROR, Verdict.TIMEOUT}, 60),
    ("memory_bomb.py", {Verdict.RUNTIME_ERROR}, 60),
    ("disk_bomb.py", {Verdict.RUNTIME_ERROR}, 60),
    ("output_flood.py", {Verdict.RUNTIME_ERROR}, 60),
    # The wall clock is what it tests: 8 s leaves the honest part (import, setup) several
    # seconds even on a loaded host, and spends 7 s less than 15 waiting for the kill.
    ("sleep_forever.py", {Verdict.TIMEOUT}, 8),
]
COMPILE_BOMBS = [
    ("compile_bomb_include.cpp", Verdict.COMPILE_ERROR),
    ("compile_bomb_template.cpp", Verdict.COMPILE_ERROR),
]


@pytest.fixture(scope="module")
def options(tmp_path_factory: pytest.TempPathFactory, kjudge_home: Path) -> EvalOptions:
    root = tmp_path_factory.mktemp("kjudge-attacks")
    return EvalOptions(
        device="cpu",
        trials=2,
        measure_timing=False,
        baselines=False,
        run_timeout_s=30,
        build_timeout_s=30,
        cache_dir=kjudge_home / "cache",
        scratch_root=root / "scratch",
    )


def _evaluate(name: str, options: EvalOptions, language: Language | None = None) -> Result:
    sub = Submission.from_file(SUBMISSIONS / name, language=language)
    return api.evaluate(PROBLEM, sub, options)


def _everything(result: Result) -> str:
    return result.model_dump_json()


@pytest.fixture
def canary_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Secrets in the worker's own environment, as a real deployment has them.
    monkeypatch.setenv("KJUDGE_DATABASE_URL", f"postgresql://kjudge:{CANARY}@127.0.0.1/kjudge")
    monkeypatch.setenv("KJUDGE_BROKER_URL", f"redis://:{CANARY}@127.0.0.1:6379/0")
    monkeypatch.setenv("KJUDGE_CANARY_SECRET", CANARY)
    # The operator's per-sandbox memory cap (the bomb would otherwise fill half the machine).
    monkeypatch.setenv("KJUDGE_SANDBOX_MEMORY_BYTES", str(3 << 30))


def _next_is_correct(options: EvalOptions) -> None:
    result = _evaluate("legit.py", options)
    assert result.verdict == Verdict.CORRECT, (result.message, result.logs.run[-2000:])


@pytest.mark.parametrize(("name", "verdicts", "wall_s"), HOST_ATTACKS, ids=[a[0] for a in HOST_ATTACKS])
def test_host_attack(
    name: str, verdicts: set[Verdict], wall_s: int, options: EvalOptions, canary_env: None
) -> None:
    before = _children()
    result = _evaluate(name, options.model_copy(update={"run_timeout_s": wall_s}))
    assert result.verdict in verdicts, (result.verdict, result.message, result.logs.run[-3000:])
    assert "ATTACK SUCCEEDED" not in _everything(result)
    assert CANARY not in _everything(result)
    if result.verdict != Verdict.CORRECT:
        assert result.message  # says what stopped it
    assert len(result.logs.run) < 2 << 20  # floods are capped
    # Nothing the attack made survives on the host: its scratch dir is gone, and no process it
    # started (a fork bomb's children, a detached sleeper) is left under this worker.
    assert options.scratch_root is not None and list(options.scratch_root.iterdir()) == []
    assert _children() <= before, _children() - before
    _next_is_correct(options)


def test_shared_cache_untouched_by_a_run(options: EvalOptions) -> None:
    # write_outside.py also writes into the shared cache's root, native modules, probed targets
    # and baselines: nothing of it may reach the host.
    result = _evaluate("write_outside.py", options)
    assert result.verdict == Verdict.CORRECT, (result.message, result.logs.run[-2000:])
    cache = options.resolved_cache_dir()
    pwned = [p for p in cache.rglob("*pwned*")]
    assert pwned == [], pwned


@pytest.mark.parametrize(("name", "verdict"), COMPILE_BOMBS, ids=[a[0] for a in COMPILE_BOMBS])
def test_compile_bomb(
    name: str, verdict: Verdict, options: EvalOptions, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The operator's per-sandbox memory cap, as for the host attacks: without it the /dev/zero
    # include grows cc1plus to half the machine's RAM before its allocation fails (~23 s here,
    # and the host's memory for everyone else); with it, the same memory limit stops it in ~2 s.
    monkeypatch.setenv("KJUDGE_SANDBOX_MEMORY_BYTES", str(3 << 30))
    result = _evaluate(name, options, Language.CPP)
    assert result.verdict == verdict, (result.verdict, result.message, result.logs.compile[-3000:])
    assert len(result.logs.compile) < 2 << 20
    _next_is_correct(options)


def _children() -> set[int]:
    return {int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == os.getpid()}


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


# ---------------------------------------------------------------------------------------------
# Device-side attacks (GPU).

# The wall clock each attack gets: the infinite loop needs only enough to import and compile
# (its module comes from the session's cache after the first run); the others end by themselves.
GPU_ATTACKS = [
    ("gpu_infinite_loop.py", Verdict.TIMEOUT, 25),
    ("gpu_illegal_address.py", Verdict.RUNTIME_ERROR, 90),
    ("gpu_oom.py", Verdict.RUNTIME_ERROR, 90),
]


@pytest.mark.gpu
@pytest.mark.gpu_exclusive
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize(("name", "verdict", "timeout_s"), GPU_ATTACKS, ids=[a[0] for a in GPU_ATTACKS])
def test_device_attack(
    name: str, verdict: Verdict, timeout_s: int, tmp_path: Path, kjudge_home: Path
) -> None:
    opts = EvalOptions(
        device="cuda",
        trials=2,
        measure_timing=False,
        baselines=False,
        run_timeout_s=timeout_s,
        build_timeout_s=300,  # the compile is not under attack: a cold cache's nvcc gets its time
        cache_dir=kjudge_home / "cache",
        scratch_root=tmp_path / "scratch",
    )
    result = _evaluate(name, opts)
    assert result.verdict == verdict, (result.verdict, result.message, result.logs.run[-3000:])
    after = _evaluate("legit.py", opts)
    assert after.verdict == Verdict.CORRECT, (after.message, after.logs.run[-2000:])
    free, total = torch.cuda.mem_get_info()
    assert free > total * 0.5  # the hoard went away with the child
