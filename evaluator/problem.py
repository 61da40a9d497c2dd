"""Problems in KernelBench's format: `Model`, `get_inputs()`, `get_init_inputs()`.

The parent never executes a problem: it reads the source, checks it statically (syntax, the three
names) and reads optional settings from a module-level literal

    KJUDGE = {"atol": 1e-3, "rtol": 1e-3, "dtype": "float16", "input_read_fraction": 0.5}

with `ast.literal_eval`, so settings travel with the source and so with its id (SHA-256 of the
source bytes). The problem's code runs only in the sandboxed child (evaluator/runner.py).
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
SETTINGS_NAME = "KJUDGE"

FloatDtype = Literal["float32", "float16", "bfloat16", "float64"]


class ProblemError(ValueError):
    """The problem source is unusable; the message says what to fix."""


class ProblemSettings(BaseModel):
    """Per-problem settings. Tolerances default to KernelBench's (atol = rtol = 1e-2) so results
    are comparable with its published numbers; a problem that needs tighter checks sets them."""

    model_config = ConfigDict(extra="forbid")

    atol: float = Field(default=1e-2, ge=0)
    rtol: float = Field(default=1e-2, ge=0)
    dtype: FloatDtype | None = Field(
        default=None, description="cast floating inputs and the models to this dtype before running"
    )
    input_read_fraction: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="the share of the inputs' bytes the output depends on (a causal mask leaves the "
        "rest unread); the roofline's minimum traffic counts only that much input",
    )


class Problem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    source: str
    settings: ProblemSettings = Field(default_factory=ProblemSettings)

    @property
    def id(self) -> str:
        return problem_id(self.source)

    @classmethod
    def from_file(cls, path: str | Path) -> Problem:
        path = Path(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ProblemError(f"cannot read problem file {path}: {exc.strerror or exc}") from None
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProblemError(
                f"problem file {path} is not UTF-8 text (invalid byte at offset {exc.start})"
            ) from None
        return cls.from_source(source, name=path.stem)

    @classmethod
    def from_source(cls, source: str, name: str = "problem") -> Problem:
        if not source.strip():
            raise ProblemError(f"problem {name!r} is empty: it must define {', '.join(REQUIRED_NAMES)}")
        try:
            tree = ast.parse(source, filename=f"{name}.py")
        except SyntaxError as exc:
            raise ProblemError(
                f"problem {name!r} has a syntax error at line {exc.lineno}: {exc.msg}"
            ) from None
        except (ValueError, RecursionError, MemoryError) as exc:
            raise ProblemError(f"problem {name!r} cannot be parsed: {exc}") from None
        defined = _top_level_names(tree)
        missing = [n for n in REQUIRED_NAMES if n not in defined]
        if missing:
            raise ProblemError(
                f"problem {name!r} does not define {', '.join(missing)}; a problem is a module with "
                "class Model(nn.Module), get_inputs() and get_init_inputs() (KernelBench's format)"
            )
        return cls(name=name, source=source, settings=_settings(tree, name))


def problem_id(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _settings(tree: ast.Module, name: str) -> ProblemSettings:
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == SETTINGS_NAME
        ):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                raise ProblemError(
                    f"problem {name!r}: {SETTINGS_NAME} must be a literal dict such as "
                    '{"atol": 1e-3, "rtol": 1e-3, "dtype": "float16"}'
                ) from None
            if not isinstance(value, dict):
                raise ProblemError(
                    f"problem {name!r}: {SETTINGS_NAME} must be a dict, not {type(value).__name__}"
                )
            try:
                return ProblemSettings.model_validate(value)
            except ValidationError as exc:
                errors = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                raise ProblemError(f"problem {name!r}: invalid {SETTINGS_NAME} settings: {errors}") from None
    return ProblemSettings()
