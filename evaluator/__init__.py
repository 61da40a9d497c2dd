"""kjudge's evaluator: a plain library (no HTTP, no database).

    from evaluator import Problem, Submission, EvalOptions, evaluate
    result = evaluate(Problem.from_file("problem.py"), Submission.from_file("kernel.cu"))

Names are imported lazily: the runner child imports `evaluator.runner` and should not pay for
the parent-side modules.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "evaluate": "evaluator.api",
    "EvaluationError": "evaluator.api",
    "EvalOptions": "evaluator.options",
    "TimingOptions": "evaluator.options",
    "Submission": "evaluator.options",
    "Problem": "evaluator.problem",
    "ProblemError": "evaluator.problem",
    "Result": "evaluator.result",
    "Verdict": "evaluator.result",
    "Status": "evaluator.result",
    "Language": "evaluator.result",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'evaluator' has no attribute {name!r}")
