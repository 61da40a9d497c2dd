from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from evaluator.problem import Problem, ProblemError

RELU = Path(__file__).parents[2] / "examples" / "relu" / "problem.py"

MINIMAL = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x
def get_inputs():
    return [torch.rand(4)]
def get_init_inputs():
    return []
"""


def test_id_is_sha256_of_source() -> None:
    problem = Problem.from_file(RELU)
    assert problem.id == hashlib.sha256(RELU.read_bytes()).hexdigest()
    assert problem.name == "problem"
    assert Problem.from_source(problem.source).id == problem.id


def test_default_settings_are_kernelbench_tolerances() -> None:
    settings = Problem.from_source(MINIMAL).settings
    assert (settings.atol, settings.rtol, settings.dtype) == (1e-2, 1e-2, None)


def test_settings_from_module_literal() -> None:
    source = MINIMAL + '\nKJUDGE = {"atol": 1e-4, "rtol": 2e-4, "dtype": "float16"}\n'
    settings = Problem.from_source(source).settings
    assert (settings.atol, settings.rtol, settings.dtype) == (1e-4, 2e-4, "float16")


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ('KJUDGE = {"atol": "tight"}', "atol"),
        ('KJUDGE = {"tolerance": 1}', "tolerance"),
        ('KJUDGE = {"dtype": "int8"}', "dtype"),
        ("KJUDGE = dict(atol=1)", "literal dict"),
        ("KJUDGE = [1]", "must be a dict"),
    ],
)
def test_bad_settings_say_what_to_fix(extra: str, needle: str) -> None:
    with pytest.raises(ProblemError, match=needle):
        Problem.from_source(MINIMAL + "\n" + extra + "\n")


def test_missing_names() -> None:
    with pytest.raises(ProblemError, match="does not define get_inputs, get_init_inputs"):
        Problem.from_source("import torch\nclass Model(torch.nn.Module):\n    pass\n")


def test_syntax_error_names_the_line() -> None:
    with pytest.raises(ProblemError, match="syntax error at line 6"):
        Problem.from_source(MINIMAL.replace("def get_inputs():", "def get_inputs(:"))


def test_empty_problem() -> None:
    with pytest.raises(ProblemError, match="empty"):
        Problem.from_source("  \n")


def test_non_utf8_and_missing_files(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.py"
    bad.write_bytes(MINIMAL.encode() + b"# caf\xe9\n")
    with pytest.raises(ProblemError, match="not UTF-8"):
        Problem.from_file(bad)
    with pytest.raises(ProblemError, match="cannot read"):
        Problem.from_file(tmp_path / "absent.py")
