"""kernelbench and triton: a Python module that defines `ModelNew` (KernelBench's format).

The source is written to a real file in scratch and imported as a real module, so that
`inspect.getsource` (which @triton.jit needs) and tracebacks point at the author's lines.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from evaluator.languages.base import Candidate, Context, LoadError
from evaluator.languages.precheck import python_syntax_error

MODULE_NAME = "kjudge_candidate"


def _is_build_error(exc: BaseException) -> bool:
    """load_inline failures: the shim's NativeBuildError, or PyTorch's own builder's message."""
    return type(exc).__name__ == "NativeBuildError" or "Error building extension" in str(exc)


def exception_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:500] if first else type(exc).__name__


def import_candidate(path: Path) -> Any:
    source = path.read_text()
    problem = python_syntax_error(source, filename=path.name)
    if problem:
        raise LoadError("compile_error", problem)
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module  # dataclasses, pickling and triton look modules up by name
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001  (SystemExit from a candidate is its error too)
        sys.modules.pop(MODULE_NAME, None)
        if _is_build_error(exc):
            log = getattr(exc, "log", None) or str(exc)
            raise LoadError(
                "compile_error", "load_inline failed to build the extension: " + _first_error(log), log
            ) from None
        raise LoadError(
            "runtime_error", "importing the submission raised " + exception_line(exc), traceback.format_exc()
        ) from None
    return module


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower() and line.strip():
            return line.strip()[:300]
    return (log.strip().splitlines() or ["(no compiler output)"])[-1][:300]


class ModelNewCandidate(Candidate):
    def __init__(self, module: Any) -> None:
        model_new = getattr(module, "ModelNew", None)
        if model_new is None:
            raise LoadError(
                "compile_error",
                "the submission defines no ModelNew: define `class ModelNew(nn.Module)` whose forward "
                "takes the same inputs as the problem's Model",
            )
        if not callable(model_new):
            raise LoadError(
                "compile_error", f"ModelNew must be a class (an nn.Module), not {type(model_new).__name__}"
            )
        self.model_new = model_new

    def instantiate(self, ctx: Context) -> Callable[..., Any]:
        torch.manual_seed(ctx.seed)
        with torch.device(ctx.device):
            model = self.model_new(*ctx.init_inputs)
        if isinstance(model, torch.nn.Module):
            model = model.to(ctx.device)
            if ctx.dtype is not None:
                model = model.to(ctx.dtype)
        if not callable(model):
            raise TypeError(f"ModelNew(...) returned a {type(model).__name__}, which cannot be called")
        return model


def load(path: Path) -> Candidate:
    return ModelNewCandidate(import_candidate(path))
