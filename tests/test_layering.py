"""Each top-level package imports only the packages below it (docs/internals.md, Layout):

    kjudge/  →  api/, worker/  →  db/  →  core/        evaluator/ (a plain library)

core/ (settings, queue and task names, the Celery configuration, the publisher) is what api/
and worker/ share, so neither imports the other. Read from the source with `ast`, so an import
inside a function or under TYPE_CHECKING counts as well; nothing is allowed by exception.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# package -> the top-level packages it must never import.
FORBIDDEN: dict[str, frozenset[str]] = {
    "evaluator": frozenset({"kjudge", "api", "worker", "db", "core"}),
    "problems": frozenset({"kjudge", "api", "worker", "db", "core"}),
    "core": frozenset({"kjudge", "api", "worker", "db"}),
    "db": frozenset({"kjudge", "api", "worker"}),
    "migrations": frozenset({"kjudge", "api", "worker"}),
    "api": frozenset({"kjudge", "worker"}),
    "worker": frozenset({"kjudge", "api"}),
}

_DYNAMIC = {"import_module", "__import__"}


def imported_modules(source: str, module: str) -> Iterator[str]:
    """Every module name `source` (the module `module`, dotted) imports: import statements
    anywhere in it, relative ones resolved, and importlib.import_module / __import__ of a literal."""
    package = module.split(".")[:-1]  # a package's __init__ is passed as "pkg.__init__"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                yield ".".join([*base, *([node.module] if node.module else [])])
            elif node.module:
                yield node.module
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if name in _DYNAMIC and isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield first.value


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts)


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_nothing_above_it(package: str) -> None:
    files = _modules(package)
    assert files, f"{package}/ has no modules: the layering test is looking in the wrong place"
    wrong = [
        f"{path.relative_to(REPO)} imports {name}"
        for path in files
        for name in imported_modules(path.read_text(), _dotted(path))
        if name.split(".")[0] in FORBIDDEN[package]
    ]
    assert not wrong, f"{package}/ must not import {sorted(FORBIDDEN[package])}:\n" + "\n".join(wrong)


def test_the_scan_sees_every_kind_of_import() -> None:
    source = """
import worker.tasks
from api.settings import Settings
from . import sibling
from ..db import models
import importlib

def later():
    from api import queue
    importlib.import_module("worker.celery_app")
    __import__("kjudge")
"""
    expected = {"worker.tasks", "api.settings", "core.sub", "core.db", "api", "worker.celery_app", "kjudge"}
    assert expected <= set(imported_modules(source, "core.sub.mod"))
    # The real tree: the API's enqueuer comes from core, not from worker/.
    assert "core.publish" in set(imported_modules((REPO / "api" / "app.py").read_text(), "api.app"))
