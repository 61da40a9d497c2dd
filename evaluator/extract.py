"""Pulling the candidate's source out of a model's completion (RL rewards, agents).

A completion is prose around code. The code is, in order of preference:
1. the last fenced block (```lang ... ```) whose tag is a kernel language or unset — the answer
   comes last, after drafts and explanations; a block tagged `bash`, `text`, `json`... is never it;
2. with no fence, the completion itself when it is plainly a source: a KernelBench module
   (defines `class ModelNew`) or a C++/CUDA/HIP source (an `#include` and a function);
3. otherwise nothing: a format failure, scored without a submission.

The language is the fence's tag mapped to kjudge's languages (`python` → kernelbench or triton by
the source, `cpp`/`c++` → cpp unless HIP markers, `cuda`/`cu` → cuda, `hip` → hip), else inferred
from the source (evaluator.languages.infer), unless the caller gives one.
Text only: no import of torch, safe in the API process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evaluator.languages.infer import UnknownLanguage, infer_language
from evaluator.result import Language

# An opening fence of 3+ backticks or tildes with an optional info string; the block runs to a
# closing fence of the same character and at least the same length (CommonMark's rule).
_FENCE = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)$", re.MULTILINE)
_MODELNEW = re.compile(r"^\s*class\s+ModelNew\b", re.MULTILINE)
_NATIVE_FUNCTION = re.compile(r"#\s*include\b[\s\S]*\b\w+\s*\([^;{]*\)\s*\{")

# Fence tags that name a kernel language (None: decide from the source).
_TAGS: dict[str, Language | None] = {
    "": None,
    "python": None,
    "py": None,
    "python3": None,
    "triton": Language.TRITON,
    "kernelbench": Language.KERNELBENCH,
    "cpp": Language.CPP,
    "c++": Language.CPP,
    "cxx": Language.CPP,
    "cc": Language.CPP,
    "c": Language.CPP,
    "cuda": Language.CUDA,
    "cu": Language.CUDA,
    "hip": Language.HIP,
}
_PYTHON_TAGS = frozenset({"python", "py", "python3"})


@dataclass(frozen=True)
class Extracted:
    source: str
    language: Language
    how: str  # "fence:<tag>" or "raw": where the code came from (logs, tests)


@dataclass(frozen=True)
class _Block:
    tag: str
    body: str


def _blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    pos = 0
    while True:
        opening = _FENCE.search(text, pos)
        if opening is None:
            return blocks
        fence = opening.group("fence")
        closing = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        start = opening.end() + 1
        end_match = closing.search(text, start)
        # An unclosed last block (the completion was cut at max tokens) still counts: its code
        # is most likely truncated, and the evaluation will say so with a compile error.
        end = end_match.start() if end_match else len(text)
        info = opening.group("info").strip()
        tag = info.split()[0].lower() if info else ""
        blocks.append(_Block(tag=tag, body=text[start:end] if start <= end else ""))
        if end_match is None:
            return blocks
        pos = end_match.end()


def _language_of(tag: str, source: str) -> Language | None:
    declared = _TAGS.get(tag)
    if declared is Language.CPP:
        # A ```cpp block is often HIP or CUDA host+device code: the source knows better.
        try:
            return infer_language(source, "kernel.cpp")
        except UnknownLanguage:
            return declared
    if declared is not None:
        return declared
    if tag in _PYTHON_TAGS:
        return infer_language(source, "kernel.py")
    try:
        return infer_language(source)
    except UnknownLanguage:
        return None


def extract_code(completion: str, language: Language | str | None = None) -> Extracted | None:
    """The candidate in `completion`, or None when it holds no code (a format failure)."""
    given = Language(language) if language else None
    for block in reversed(_blocks(completion)):
        if block.tag not in _TAGS or not block.body.strip():
            continue
        found = given or _language_of(block.tag, block.body)
        if found is not None:
            return Extracted(
                source=block.body.strip("\n") + "\n", language=found, how=f"fence:{block.tag or '-'}"
            )
    raw = completion.strip()
    if not raw or "```" in raw:
        return None
    if _MODELNEW.search(raw):
        return Extracted(source=raw + "\n", language=given or infer_language(raw, "kernel.py"), how="raw")
    if _NATIVE_FUNCTION.search(raw):
        return Extracted(source=raw + "\n", language=given or infer_language(raw), how="raw")
    return None
