"""`kjudge eval` as users run it: exit codes, JSON and the table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluator.conftest import CASES, EXAMPLES, ROOT


def kjudge(home: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")} | {"KJUDGE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "kjudge", "eval", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )


def test_readme_command_prints_correct_json(kjudge_home: Path) -> None:
    """The issue's acceptance command (shares the session's build cache)."""
    proc = kjudge(
        kjudge_home,
        "--problem",
        EXAMPLES / "problem.py",
        "--kernel",
        EXAMPLES / "relu_cpp.cpp",
        "--device",
        "cpu",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["verdict"] == "correct"
    assert '"verdict": "correct"' in proc.stdout
    assert result["timing"]["median_ms"] > 0 and result["target"]["backend"] == "cpu"


def test_table_output_and_exit_zero_for_a_failing_verdict(kjudge_home: Path) -> None:
    proc = kjudge(
        kjudge_home,
        "--problem",
        EXAMPLES / "problem.py",
        "--kernel",
        CASES / "kb_wrong_shape.py",
        "--device",
        "cpu",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split() == ["verdict", "incorrect"]
    assert "shape (16384, 16)" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--kernel", "examples/relu/absent.cpp"], "cannot read kernel file"),
        (["--kernel", "examples/relu/README.md"], "--language"),
        (["--kernel", "examples/relu/relu_cpp.cpp", "--language", "fortran"], "invalid choice"),
        (["--kernel", "examples/relu/relu_cpp.cpp", "--trials", "0"], "--trials"),
    ],
)
def test_usage_errors_exit_2(kjudge_home: Path, args: list[str], needle: str) -> None:
    proc = kjudge(kjudge_home, "--problem", EXAMPLES / "problem.py", "--device", "cpu", *args)
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_unusable_files_exit_2(kjudge_home: Path, tmp_path: Path) -> None:
    latin1 = tmp_path / "k.cpp"
    latin1.write_bytes(b"// caf\xe9\n")
    proc = kjudge(kjudge_home, "--problem", EXAMPLES / "problem.py", "--kernel", latin1, "--device", "cpu")
    assert proc.returncode == 2 and "not UTF-8" in proc.stderr
    broken = tmp_path / "problem.py"
    broken.write_text("class Model(:\n")
    proc = kjudge(kjudge_home, "--problem", broken, "--kernel", EXAMPLES / "relu_cpp.cpp", "--device", "cpu")
    assert proc.returncode == 2 and "syntax error at line 1" in proc.stderr
