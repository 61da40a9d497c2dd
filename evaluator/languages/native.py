"""cpp, cuda and hip: an extension module built by evaluator.build that exposes `entry`.

The entry is called as `entry(*inputs, *params)` where params are the reference model's
`state_dict()` values in order (DESIGN.md), on the device.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from evaluator.build import BuildOutput, load_module
from evaluator.build.lite import ARITY_DOC
from evaluator.languages.base import Candidate, Context, LoadError
from evaluator.languages.python_module import exception_line


def declared_arity(fn: Any) -> int | None:
    """Number of parameters in a pybind11 function's signature line ("forward(arg0: ...) -> ..."),
    or None when it cannot be read (overloads, *args)."""
    doc = (getattr(fn, "__doc__", None) or "").strip()
    if not doc or "Overloaded function" in doc:
        return None
    lite_arity = ARITY_DOC.search(doc)  # a lite module's entry takes *args; its doc has the count
    if lite_arity is not None:
        return int(lite_arity.group(1))
    first = doc.splitlines()[0]
    open_at = first.find("(")
    if open_at < 0:
        return None
    depth, args, current = 0, [], ""
    for ch in first[open_at + 1 :]:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            args.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        args.append(current)
    if any(a.strip().startswith("*") for a in args):
        return None
    return len(args)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


class NativeCandidate(Candidate):
    def __init__(self, fn: Any, entry: str) -> None:
        self.fn = fn
        self.entry = entry

    def instantiate(self, ctx: Context) -> Callable[..., Any]:
        # The candidate gets its own copies: writing to them must not change the reference.
        params = [t.detach().clone() for t in ctx.reference.state_dict().values()]
        fn, entry = self.fn, self.entry
        arity = declared_arity(fn)

        def call(*inputs: Any) -> Any:
            if arity is not None and arity != len(inputs) + len(params):
                raise ArityError(entry, arity, len(inputs), len(params))
            return fn(*inputs, *params)

        return call


class ArityError(TypeError):
    def __init__(self, entry: str, arity: int, n_inputs: int, n_params: int) -> None:
        detail = f"the problem passes {_plural(n_inputs, 'input')}"
        if n_params:
            detail += f" + {_plural(n_params, 'parameter')} (the reference model's state_dict() in order)"
        super().__init__(
            f"{entry} takes {_plural(arity, 'tensor')} but {detail}; "
            f"declare {entry} with {n_inputs + n_params} torch::Tensor arguments"
        )


def load(build: BuildOutput, entry: str) -> Candidate:
    try:
        module = load_module(build)
    except Exception as exc:  # noqa: BLE001  (undefined symbols, static initializers that throw)
        raise LoadError(
            "compile_error",
            "the built module cannot be loaded: " + exception_line(exc),
            traceback.format_exc(),
        ) from None
    fn = getattr(module, entry, None)
    if fn is None:
        raise LoadError("compile_error", f"the built module exports no function `{entry}`")
    return NativeCandidate(fn, entry)
