"""Executing a problem module's source, optionally at reduced size.

A problem keeps its sizes in module-level constants (KernelBench's style: `batch_size = 4096`)
and may declare smaller ones for CPU runs:

    KJUDGE_SMALL = {"batch_size": 4, "dim": 64}

`load_namespace(source, small=True)` rewrites those assignments in the syntax tree *before*
executing, so constants derived from them (`hidden = 4 * dim`) shrink too. Only trusted code
(the built-in library) or code inside a sandboxed child (problems/probe.py) goes through here.
"""

from __future__ import annotations

import ast
import types
from typing import Any

SMALL_NAME = "KJUDGE_SMALL"
TAGS_NAME = "KJUDGE_TAGS"


class ProblemLoadError(ValueError):
    """The source cannot be executed as a problem module; the message says why."""


def literal_assignment(source: str, name: str) -> Any:
    """The literal value of a top-level `name = <literal>`, or None when absent.

    Raises ProblemLoadError when the name is assigned something that is not a literal.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None  # the static checks in evaluator.problem report syntax errors
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            try:
                return ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                raise ProblemLoadError(f"{name} must be a literal (numbers, strings, lists, dicts)") from None
    return None


def small_sizes(source: str) -> dict[str, int | float] | None:
    """The problem's KJUDGE_SMALL overrides, validated; None when it declares none."""
    value = literal_assignment(source, SMALL_NAME)
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
        for k, v in value.items()
    ):
        raise ProblemLoadError(f'{SMALL_NAME} must map constant names to numbers, e.g. {{"batch_size": 4}}')
    return value


def declared_tags(source: str) -> list[str] | None:
    value = literal_assignment(source, TAGS_NAME)
    if value is None:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(t, str) for t in value):
        raise ProblemLoadError(f'{TAGS_NAME} must be a list of strings, e.g. ["matmul", "fused"]')
    return list(value)


def _shrink(tree: ast.Module, overrides: dict[str, int | float]) -> ast.Module:
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in overrides:
                node.value = ast.copy_location(ast.Constant(overrides[name]), node.value)
                found.add(name)
    missing = sorted(set(overrides) - found)
    if missing:
        raise ProblemLoadError(
            f"{SMALL_NAME} names {', '.join(missing)}, which the module does not assign at top level "
            "(as `name = value`)"
        )
    return tree


def load_namespace(source: str, name: str = "problem", *, small: bool = False) -> dict[str, Any]:
    """Executes the problem's source in a fresh module and returns its globals.

    With `small=True` the KJUDGE_SMALL constants replace the full-size ones. Exceptions raised
    by the problem's own top-level code propagate unchanged (callers name the rule broken).
    """
    try:
        tree = ast.parse(source, filename=f"{name}.py")
    except SyntaxError as exc:
        raise ProblemLoadError(f"syntax error at line {exc.lineno}: {exc.msg}") from None
    if small:
        overrides = small_sizes(source)
        if overrides is None:
            raise ProblemLoadError(f"the problem declares no {SMALL_NAME} sizes")
        tree = _shrink(tree, overrides)
    module = types.ModuleType(f"kjudge_problem_{name}")
    module.__file__ = f"{name}.py"
    exec(compile(tree, f"{name}.py", "exec"), module.__dict__)  # noqa: S102 - trusted or sandboxed
    return module.__dict__
