"""Profile mode where there is nothing to profile: the cpu target, and verdicts other than
`correct`. The profile says why in one line; verdict and timing are those of a plain run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evaluator.api import evaluate
from evaluator.options import EvalOptions, Submission
from evaluator.problem import Problem
from evaluator.result import Verdict
from tests.evaluator.conftest import CASES, EXAMPLES, ROOT

RELU = Problem.from_file(EXAMPLES / "problem.py")


def test_cpu_target_gets_a_message_and_an_unchanged_result(cpu_options: EvalOptions) -> None:
    options = cpu_options.model_copy(update={"profile": True})
    result = evaluate(RELU, Submission.from_file(EXAMPLES / "relu_triton.py"), options)
    assert result.verdict == Verdict.CORRECT and result.timing is not None and result.timing.median_ms > 0
    assert result.profile is not None and not result.profile.available and result.profile.kernels == []
    assert "cpu target" in (result.profile.message or "")


def test_only_a_correct_candidate_is_profiled(cpu_options: EvalOptions) -> None:
    options = cpu_options.model_copy(update={"profile": True})
    wrong = evaluate(RELU, Submission.from_file(CASES / "kb_wrong_shape.py"), options)
    assert wrong.verdict == Verdict.INCORRECT
    assert wrong.profile is not None and not wrong.profile.available
    assert "only a correct candidate is profiled" in (wrong.profile.message or "")
    assert "incorrect" in (wrong.profile.message or "")
    # a source refused before any child runs still answers the request
    early = evaluate(RELU, Submission(source="def broken(:\n", filename="k.py"), options)
    assert early.verdict == Verdict.COMPILE_ERROR and early.profile is not None
    assert "compile_error" in (early.profile.message or "")
    # not asked, not there
    plain = evaluate(RELU, Submission(source="def broken(:\n", filename="k.py"), cpu_options)
    assert plain.profile is None and "profile" not in plain.model_dump(exclude_none=True)


def test_kjudge_eval_profile_json_on_cpu(kjudge_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")}
    env.update(KJUDGE_HOME=str(kjudge_home), PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "kjudge", "eval", "--problem", str(EXAMPLES / "problem.py")]
    argv += ["--kernel", str(CASES / "kb_relu.py"), "--device", "cpu", "--no-baselines", "--trials", "1"]
    run = subprocess.run(
        [*argv, "--profile", "--json"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert result["verdict"] == "correct" and result["profile"]["available"] is False
    assert "cpu target" in result["profile"]["message"]
    table = subprocess.run(
        [*argv, "--profile"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert table.returncode == 0 and "profile" in table.stdout and "cpu target" in table.stdout
    bad = subprocess.run([*argv, "--profile-timeout", "0"], env=env, cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and "--profile-timeout must be positive" in bad.stderr


def test_kjudge_submit_prints_the_profile(capsys) -> None:  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from api.schemas import SubmissionOut
    from kjudge.commands.submit import _print_submission

    def sub(profile: dict) -> SubmissionOut:
        result = {"problem_id": "p", "verdict": "correct", "profile": profile}
        return SubmissionOut(
            id="s1", problem_id="p", language="cuda", target="cuda", queue="eval.cuda", status="done",
            verdict="correct", created_at=datetime.now(UTC), profile=True, result=result,
        )  # fmt: skip

    _print_submission(sub({"available": True, "bottleneck": "memory-bound: `k`"}), as_json=False)
    _print_submission(sub({"available": False, "message": "no ncu"}), as_json=False)
    out = capsys.readouterr().out
    assert "  profile: memory-bound: `k`" in out and "  profile: none: no ncu" in out
