from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.languages.infer import UnknownLanguage, infer_language
from evaluator.languages.native import ArityError, declared_arity
from evaluator.languages.precheck import precheck
from evaluator.options import Submission, SubmissionError
from evaluator.result import Language

EXAMPLES = Path(__file__).parents[2] / "examples" / "relu"


@pytest.mark.parametrize(
    ("name", "language"),
    [
        ("relu_cpp.cpp", Language.CPP),
        ("relu_cuda.cu", Language.CUDA),
        ("relu_hip.hip", Language.HIP),
        ("relu_triton.py", Language.TRITON),
        ("relu_kernelbench.py", Language.KERNELBENCH),
        ("relu_kernelbench_hip.py", Language.KERNELBENCH),
        ("relu_hang.py", Language.KERNELBENCH),
    ],
)
def test_examples_infer_their_language(name: str, language: Language) -> None:
    path = EXAMPLES / name
    assert infer_language(path.read_text(), path.name) is language


def test_cpp_file_with_hip_header_is_hip() -> None:
    source = (EXAMPLES / "relu_hip.hip").read_text()
    assert infer_language(source, "kernel.cpp") is Language.HIP
    assert infer_language(source, "kernel.cc") is Language.HIP


def test_inference_from_source_alone() -> None:
    assert infer_language((EXAMPLES / "relu_cuda.cu").read_text()) is Language.CUDA
    assert infer_language((EXAMPLES / "relu_cpp.cpp").read_text()) is Language.CPP
    assert infer_language((EXAMPLES / "relu_triton.py").read_text()) is Language.TRITON
    assert infer_language("import torch\nclass ModelNew: pass\n") is Language.KERNELBENCH


def test_unknown_extension_says_what_to_do() -> None:
    with pytest.raises(UnknownLanguage, match="--language"):
        infer_language("whatever", "kernel.rs")
    with pytest.raises(UnknownLanguage):
        infer_language("just some words")


def test_precheck() -> None:
    assert "empty" in (precheck("   \n", Language.CPP) or "")
    assert "NUL" in (precheck("a\x00b", Language.CPP) or "")
    message = precheck("class ModelNew(:\n    pass\n", Language.KERNELBENCH) or ""
    assert "syntax error at line 1" in message
    assert precheck("int x;", Language.CPP) is None
    assert precheck("x = 1\n", Language.TRITON) is None


def test_submission_from_file(tmp_path: Path) -> None:
    good = tmp_path / "k.cpp"
    good.write_text("int x;")
    sub = Submission.from_file(good)
    assert (sub.source, sub.filename, sub.language, sub.entry) == ("int x;", "k.cpp", None, "forward")
    bad = tmp_path / "bad.cpp"
    bad.write_bytes(b"int \xff;")
    with pytest.raises(SubmissionError, match="not UTF-8"):
        Submission.from_file(bad)
    with pytest.raises(SubmissionError, match="cannot read"):
        Submission.from_file(tmp_path / "absent.cpp")


class _Fn:
    def __init__(self, doc: str) -> None:
        self.__doc__ = doc


@pytest.mark.parametrize(
    ("doc", "arity"),
    [
        ("forward(arg0: torch.Tensor) -> torch.Tensor\n", 1),
        ("forward(arg0: torch.Tensor, arg1: torch.Tensor, arg2: torch.Tensor) -> torch.Tensor\n", 3),
        ("forward(arg0: list[torch.Tensor], arg1: Tuple[int, int]) -> torch.Tensor", 2),
        ("forward() -> torch.Tensor", 0),
        ("forward(*args, **kwargs)\nOverloaded function.\n\n1. forward(arg0: torch.Tensor)", None),
        ("", None),
    ],
)
def test_declared_arity(doc: str, arity: int | None) -> None:
    assert declared_arity(_Fn(doc)) == arity


def test_arity_message_counts_inputs_and_parameters() -> None:
    message = str(ArityError("forward", 1, 1, 2))
    assert message.startswith("forward takes 1 tensor but the problem passes 1 input + 2 parameters")
    assert "declare forward with 3 torch::Tensor arguments" in message
