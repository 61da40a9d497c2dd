"""The interface between a language and the runner."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


class LoadError(Exception):
    """The candidate could not be turned into a callable: becomes its verdict.

    `verdict` is "compile_error" (it does not build/import/define what it must) or
    "runtime_error" (its code raised while loading); `log` is shown as logs.compile.
    """

    def __init__(self, verdict: str, message: str, log: str = "") -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message
        self.log = log


@dataclass
class Context:
    """What a candidate needs to be instantiated for one evaluation."""

    device: str  # "cpu" or "cuda"
    dtype: torch.dtype | None  # the problem's dtype setting, applied to models and inputs
    init_inputs: list[Any]
    seed: int  # the reference model was built under this seed; the candidate's is too
    reference: torch.nn.Module


class Candidate(ABC):
    compile_log: str = ""

    @abstractmethod
    def instantiate(self, ctx: Context) -> Callable[..., Any]:
        """A callable taking the problem's inputs. Raises for the candidate's own errors."""
