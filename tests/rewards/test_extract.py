"""Code extraction from completions: the last fenced kernel block, raw sources, or nothing."""

from __future__ import annotations

import pytest

from evaluator.extract import extract_code
from evaluator.result import Language

CPP = "#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x) { return x.clamp_min(0); }\n"
CUDA = "#include <torch/extension.h>\n__global__ void k(float* x) {}\ntorch::Tensor forward(torch::Tensor x) { return x; }\n"
HIP = "#include <hip/hip_runtime.h>\n#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x) { return x; }\n"
KB = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
TRITON = "import triton\nimport triton.language as tl\n\nclass ModelNew:\n    pass\n"


def test_the_last_kernel_block_wins_over_drafts_and_other_languages() -> None:
    text = f"Draft:\n```cpp\n// old\n{CPP}```\nRun it with:\n```bash\npython run.py\n```\nFinal:\n```cuda\n{CUDA}```\n"
    got = extract_code(text)
    assert (
        got is not None and got.language is Language.CUDA and got.source == CUDA and got.how == "fence:cuda"
    )


@pytest.mark.parametrize(
    ("tag", "code", "language"),
    [
        ("cpp", CPP, Language.CPP),
        ("cpp", HIP, Language.HIP),  # a ```cpp block of HIP code is HIP
        ("hip", HIP, Language.HIP),
        ("cuda", CUDA, Language.CUDA),
        ("python", KB, Language.KERNELBENCH),
        ("python", TRITON, Language.TRITON),
        ("", CPP, Language.CPP),
        ("c++", CPP, Language.CPP),
    ],
)
def test_the_language_comes_from_the_tag_and_the_source(tag: str, code: str, language: Language) -> None:
    got = extract_code(f"Answer:\n```{tag}\n{code}```")
    assert got is not None and got.language is language and got.source == code


def test_raw_sources_without_fences() -> None:
    assert extract_code(KB).language is Language.KERNELBENCH  # type: ignore[union-attr]
    assert extract_code(CPP).language is Language.CPP  # type: ignore[union-attr]


def test_no_code_is_none() -> None:
    assert extract_code("ReLU keeps positives and zeroes negatives.") is None
    assert extract_code("") is None
    assert extract_code("```bash\nnvcc k.cu\n```") is None  # only a non-kernel block
    assert extract_code("```cpp\n\n```") is None  # an empty block


def test_a_given_language_wins_and_a_cut_off_block_still_counts() -> None:
    got = extract_code(f"```\n{CPP}```", "cuda")
    assert got is not None and got.language is Language.CUDA
    cut = extract_code("Final:\n```cpp\n#include <torch/extension.h>\ntorch::Tensor forward(")
    assert cut is not None and cut.language is Language.CPP  # the compiler will say it is cut


def test_a_longer_fence_holds_a_shorter_one() -> None:
    text = f"````python\n{KB}# usage:\n# ```\n````"
    got = extract_code(text)
    assert got is not None and got.language is Language.KERNELBENCH and "# ```" in got.source


def test_trl_completions_as_strings_or_messages() -> None:
    from kjudge.rewards.trl import completion_text

    assert completion_text("plain") == "plain"
    chat = [
        {"role": "assistant", "content": "thinking"},
        {"role": "tool", "content": "x"},
        {"role": "assistant", "content": "final"},
    ]
    assert completion_text(chat) == "final"
    assert completion_text([{"content": "no role"}]) == "no role"
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    assert completion_text(parts) == "ab"
