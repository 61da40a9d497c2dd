"""Checks made in the parent before any child starts: cheap, and they run nothing."""

from __future__ import annotations

import ast

from evaluator.languages import PYTHON_LANGUAGES
from evaluator.result import Language


def precheck(source: str, language: Language) -> str | None:
    """A compile_error message for an obviously unusable source, or None."""
    if not source.strip():
        return "the submission is empty: send the kernel's source code"
    if "\x00" in source:
        return "the submission contains NUL bytes: send the kernel's source text, not a binary"
    if language in PYTHON_LANGUAGES:
        return python_syntax_error(source)
    return None


def python_syntax_error(source: str, filename: str = "submission.py") -> str | None:
    try:
        ast.parse(source, filename=filename)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        text = f": {exc.text.strip()}" if exc.text and exc.text.strip() else ""
        return f"Python syntax error at {where}: {exc.msg}{text}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"the Python source cannot be parsed: {exc}"
    return None
