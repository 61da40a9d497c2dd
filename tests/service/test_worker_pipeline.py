"""The pipelined worker on real services (Redis, PostgreSQL, `kjudge worker` processes) with `cpp`
candidates on the CPU target: compiles of later jobs overlap the runs of earlier ones, a compile
error never reaches a run stage, an incorrect candidate is never timed, and a killed compile
process, run child or run stage each end in exactly one verdict."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("celery")

from core.settings import Settings  # noqa: E402
from worker.launcher import descendants  # noqa: E402

from .conftest import DATA, Rows, WorkerProcess, wait_for  # noqa: E402

# The session's precompiled header and lite runtime are built before the worker starts
# (kjudge_toolchain: minutes on a loaded 2-core host when this file runs first), so no test
# here spends a throwaway candidate on them.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.usefixtures("clean_db", "kjudge_toolchain"),
]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "relu"
# The service tests' small ReLU (8 x 256): what is tested here is the pipeline's ordering and
# kills, not the kernel's speed; examples/relu's 16 x 16384 made every run stage ~3x longer
# (its timing regenerates that input per sample).
PROBLEM = (DATA / "relu_problem.py").read_text()
RELU = (EXAMPLES / "relu_cpp.cpp").read_text()
INCORRECT = (EXAMPLES / "relu_incorrect.cpp").read_text()
COMPILE_ERROR = (EXAMPLES / "relu_compile_error.cpp").read_text()
# Correct, but its first call sleeps: a window to kill the run child in.
SLOW_FIRST_CALL = RELU.replace(
    "torch::Tensor forward(torch::Tensor x) {",
    "#include <chrono>\n#include <thread>\nstatic bool kjudge_slept = false;\n"
    "torch::Tensor forward(torch::Tensor x) {\n"
    "    if (!kjudge_slept) { kjudge_slept = true; std::this_thread::sleep_for(std::chrono::seconds(10)); }",
)
# The kill tests count attempts exactly: a lease long enough that a renewal delayed on a loaded
# 2-core host never passes for a dead worker (recovery then takes this long after a kill).
STEADY_LEASE = {"KJUDGE_RUNNING_LEASE_S": "12"}
TIMEOUT_S = 420  # generous: one compile and run take ~10 s on a quiet 2-core host, minutes on a loaded one


@pytest.fixture()
def problem_id(rows: Rows) -> str:
    return rows.problem(PROBLEM, "relu_cpu")


def distinct(source: str, tag: str) -> str:
    """A new content hash (so a real compile), same code."""
    return f"{source}\n// {tag} {time.time_ns()}\n"


@pytest.fixture()
def rows(rows: Rows, settings: Settings) -> Rows:
    """Rows that can also send: `submit` stores the row, then enqueues its id, as the API does."""
    from core.celery_config import make_app
    from core.publish import CeleryEnqueuer

    rows.enqueuer = CeleryEnqueuer(make_app(settings))  # type: ignore[attr-defined]
    return rows


def submit(rows: Rows, problem_id: str, source: str) -> str:
    sid = rows.submission(problem_id, source=source, language="cpp", target="cpu")
    assert rows.enqueuer.enqueue([(sid, "eval.cpu")]) == 1  # type: ignore[attr-defined]
    return sid


def final(rows: Rows, sid: str, worker: WorkerProcess, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    return wait_for(
        lambda: (r := rows.row(sid))["status"] in ("done", "error") and r,
        timeout_s,
        f"submission {sid} to finish",
        worker.log_tail,
    )


def result_of(rows: Rows, sid: str) -> dict[str, Any]:
    import sqlalchemy as sa

    from db.models import ResultRow

    with rows.engine.connect() as conn:
        return conn.execute(sa.select(ResultRow.result).where(ResultRow.submission_id == sid)).scalar_one()


def processes(root: int, *needles: str) -> list[int]:
    """Descendants of `root` whose command line contains every needle."""
    found = []
    for pid in descendants(root):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if all(n in cmdline for n in needles):
            found.append(pid)
    return found


def stage_processes(worker: WorkerProcess, node: str) -> tuple[int, list[int]]:
    """(Celery main, its pool processes) of one stage: node 'compile' or 'cpu'."""
    mains = wait_for(
        lambda: [p for p in processes(worker.proc.pid, f"kjudge-{node}@") if _parent(p) == worker.proc.pid],
        60,
        f"the {node} stage to start",
        worker.log_tail,
    )
    main = mains[0]
    # Its pool processes: the stage may have just started (no candidate ran before), so wait
    # for the prefork pool's children rather than reading them once.
    pool = wait_for(
        lambda: [p for p in processes(main, f"kjudge-{node}@") if _parent(p) == main],
        60,
        f"the {node} stage's pool",
        worker.log_tail,
    )
    return main, pool


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[1])


def test_compiles_run_ahead_and_losers_are_never_timed_or_run(
    rows: Rows, problem_id: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    """One pipelined worker takes a stream of three correct candidates, then an incorrect one and
    one that does not compile (one stream: each worker started costs seconds of CPU)."""
    worker = start_worker()
    # Before any job: every compile slot was forked with torch loaded (worker_init preloads it),
    # so no slot's first compile pays the import (3.7 s of a 4.9 s first compile here, before).
    _, pool = stage_processes(worker, "compile")
    for pid in pool:
        assert "libtorch_cpu" in Path(f"/proc/{pid}/maps").read_text(), pid

    # Three correct jobs give two consecutive pairs to overlap: enough to see the pipeline.
    sids = [submit(rows, problem_id, distinct(RELU, f"stream {k}")) for k in range(3)]
    wrong = submit(rows, problem_id, distinct(INCORRECT, "incorrect"))
    broken = submit(rows, problem_id, distinct(COMPILE_ERROR, "compile error"))
    done = [final(rows, sid, worker) for sid in sids]
    assert [d["verdict"] for d in done] == ["correct"] * 3, [d["message"] for d in done]
    order = sorted(done, key=lambda d: d["started_at"])  # the compile pool's claim order
    for k in range(len(order) - 1):
        # The compile of job k+1 started while job k was still in its run stage.
        assert order[k + 1]["started_at"] < order[k]["finished_at"], (k, order[k], order[k + 1])
    for d in order:
        durations = result_of(rows, d["id"])["durations_s"]
        assert durations["compile"] > 0.5  # really compiled by the pool (a new hash each)...
        assert durations["compile_child"] > 0 and "compile_lite_link" in durations  # ...said where
        assert "gpu_stage" in durations  # ...and evaluated by the run stage it was handed to

    done_wrong, done_broken = final(rows, wrong, worker), final(rows, broken, worker)
    assert done_wrong["verdict"] == "incorrect"
    incorrect = result_of(rows, wrong)
    assert incorrect["timing"] is None and incorrect["speedup"] is None  # never timed
    assert "gpu_stage" in incorrect["durations_s"]

    assert done_broken["verdict"] == "compile_error"
    broken_result = result_of(rows, broken)
    assert broken_result["logs"]["compile"] and broken_result["timing"] is None
    # Decided by the compile pool: no run stage ever held it.
    assert done_broken["worker"].endswith(":compile") and "gpu_stage" not in broken_result["durations_s"]


def test_the_serial_worker_does_not_overlap(
    rows: Rows, problem_id: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    """The same stream without the pipeline: the ordering above fails, so it measures something."""
    worker = start_worker("--serial")
    # Two jobs are one pair: the pipeline would overlap it, the serial worker must not.
    sids = [submit(rows, problem_id, distinct(RELU, f"serial {k}")) for k in range(2)]
    order = sorted((final(rows, sid, worker) for sid in sids), key=lambda d: d["started_at"])
    for k in range(len(order) - 1):
        assert order[k + 1]["started_at"] >= order[k]["finished_at"]


def test_a_killed_compile_process_ends_in_exactly_one_verdict(
    rows: Rows, problem_id: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    worker = start_worker(**STEADY_LEASE)

    sid = submit(rows, problem_id, distinct(RELU, "killed compile"))
    _, pool = stage_processes(worker, "compile")
    # Kill the pool process while its compiler runs (the sandboxed build child is its descendant).
    victim = wait_for(
        lambda: (
            rows.row(sid)["status"] == "compiling"
            and [p for p in pool if processes(p, "cc1plus") or processes(p, "evaluator.build")]
        ),
        120,
        "the compile to start",
        worker.log_tail,
    )[0]
    os.kill(victim, signal.SIGKILL)

    done = final(rows, sid, worker)
    assert (done["status"], done["verdict"], done["attempts"]) == ("done", "correct", 2), done
    assert rows.result_count(sid) == 1


def test_a_killed_run_child_ends_in_exactly_one_verdict(
    rows: Rows, problem_id: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    worker = start_worker(**STEADY_LEASE)
    sid = submit(rows, problem_id, distinct(SLOW_FIRST_CALL, "killed run child"))
    main, _ = stage_processes(worker, "cpu")

    def running_child() -> list[int]:
        # The run child whose candidate is being called (it sleeps in its first call); not the
        # baselines child, which measures the reference before the candidate's run starts.
        if rows.row(sid)["status"] != "running":
            return []
        return [
            p for p in processes(main, "evaluator.runner") if _phase(p).startswith(("load", "correctness"))
        ]

    victims = wait_for(running_child, TIMEOUT_S, "the run child to enter the candidate", worker.log_tail)
    for pid in victims:
        os.kill(pid, signal.SIGKILL)

    done = final(rows, sid, worker)
    assert (done["status"], done["verdict"], done["attempts"]) == ("done", "runtime_error", 1), done
    assert "SIGKILL" in (done["message"] or "")
    assert rows.result_count(sid) == 1


def _phase(pid: int) -> str:
    """The run child's phase file, beside the job it was given (evaluator.api's child protocol)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        job = next(a for a in argv if a.endswith("job.json") and "baselines" not in a)
        return (Path(job).parent / "phase").read_text().strip()
    except (OSError, StopIteration):
        return ""


def test_a_killed_run_stage_ends_in_exactly_one_verdict(
    rows: Rows, problem_id: str, start_worker: Callable[..., WorkerProcess]
) -> None:
    worker = start_worker(**STEADY_LEASE)
    sid = submit(rows, problem_id, distinct(SLOW_FIRST_CALL, "killed run stage"))
    main, pool = stage_processes(worker, "cpu")
    wait_for(lambda: rows.row(sid)["status"] == "running", TIMEOUT_S, "the run to start", worker.log_tail)
    # The whole stage at once (Celery main, pool process, run child): the launcher restarts it,
    # the lease lapses, the reconciler sends the job round again through the compile pool.
    for pid in [main, *descendants(main)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    done = final(rows, sid, worker)
    assert (done["status"], done["verdict"], done["attempts"]) == ("done", "correct", 2), done
    assert rows.result_count(sid) == 1
