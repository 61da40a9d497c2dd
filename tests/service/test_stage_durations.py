"""What a run stage adds to the result of a job the compile pool built: the pool's compile time,
steps and log, the wait for the device and the stage's own time."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("celery")

from evaluator.result import Logs, Result, Verdict  # noqa: E402
from worker.tasks import _with_stage_durations  # noqa: E402


def _result(compile_log: str = "") -> Result:
    return Result(
        problem_id="p",
        verdict=Verdict.CORRECT,
        durations_s={"run": 1.0, "compile": 0.0},
        logs=Logs(compile=compile_log, run="ran"),
    )


def test_the_compile_pools_time_steps_and_log_reach_the_result() -> None:
    handoff = {
        "compile_s": 3.4,
        "compile_steps_s": {"compile_child": 3.3, "compile_lite_units": 2.8},
        "compile_log": "built ahead under the stand-in torch\n",
        "handed_off_at": time.time() - 0.5,
    }
    out = _with_stage_durations(_result(), handoff, taken_at=time.time() - 0.2)
    assert out.durations_s["compile"] == 3.4 and out.durations_s["run"] == 1.0
    assert out.durations_s["compile_child"] == 3.3 and out.durations_s["compile_lite_units"] == 2.8
    assert 0.2 < out.durations_s["gpu_wait"] < 0.5 and out.durations_s["gpu_stage"] >= 0.2
    assert out.logs.compile == "built ahead under the stand-in torch\n" and out.logs.run == "ran"


def test_a_compile_log_of_the_run_is_kept() -> None:
    handoff = {"compile_s": 1.0, "compile_log": "from the pool\n", "handed_off_at": time.time()}
    out = _with_stage_durations(_result("== built with the lite torch API\n"), handoff, taken_at=time.time())
    assert out.logs.compile == "== built with the lite torch API\n"
