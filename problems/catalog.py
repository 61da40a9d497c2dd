"""The built-in problem library and problem validation, for the API, the CLI and the database.

- `iter_builtin_problems()` yields every problem under problems/level{1,2,3}/ as a
  `BuiltinProblem` (a 4-tuple name, source, level, tags — what db/seed.py unpacks — with its
  id, settings and roofline data as attributes).
- `validate_problem_source(source)` runs a problem in a sandboxed child (time and memory
  limits) and returns `ProblemInfo`, or raises `ProblemRejected` naming the rule broken.
- `validate_many(items)` does the same for a batch in one child (`kjudge problems import`).

Roofline data of the built-ins is stored in problems/roofline.json (written by
`python -m problems.catalog --write-roofline`; a test checks it is current), so listing the
library never runs a problem.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from evaluator.problem import Problem, ProblemError
from problems.loader import ProblemLoadError, declared_tags

PROBLEMS_DIR = Path(__file__).resolve().parent
LEVEL_DIRS = {1: "level1", 2: "level2", 3: "level3"}
KERNELS_DIR = PROBLEMS_DIR / "kernels"
ROOFLINE_FILE = PROBLEMS_DIR / "roofline.json"

DEFAULT_TIMEOUT_S = 120.0
PER_ITEM_TIMEOUT_S = 30.0
# The child's address-space limit: torch itself maps ~1-2 GiB; problems may use 4 GiB of tensors.
DEFAULT_MEMORY_BYTES = 8 << 30


class ProblemRejected(ValueError):
    """The problem broke a rule; str(exc) says which and what to fix."""

    def __init__(self, message: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule


class ProblemInfo(BaseModel):
    """What validation learned about a problem: stored with it in the database."""

    name: str
    level: int | None = None
    tags: list[str] = Field(default_factory=list)
    roofline: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    id: str = ""


class BuiltinProblem(NamedTuple):
    name: str
    source: str
    level: int
    tags: list[str]

    @property
    def id(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()

    @property
    def path(self) -> Path:
        return PROBLEMS_DIR / LEVEL_DIRS[self.level] / f"{self.name}.py"

    @property
    def settings(self) -> dict[str, Any]:
        return Problem.from_source(self.source, name=self.name).settings.model_dump(mode="json")

    @property
    def roofline(self) -> dict[str, Any]:
        """The stored roofline data; {} when problems/roofline.json is stale for this problem."""
        entry = _stored_roofline().get(self.name)
        if entry is None or entry.get("problem_id") != self.id:
            return {}
        return {k: v for k, v in entry.items() if k != "problem_id"}

    @property
    def kernels(self) -> dict[str, Path]:
        """Reference kernels by language: problems/kernels/<name>/{hip.hip, cuda.cu, triton.py}."""
        folder = KERNELS_DIR / self.name
        names = {"hip": "hip.hip", "cuda": "cuda.cu", "triton": "triton.py"}
        return {lang: folder / f for lang, f in names.items() if (folder / f).is_file()}

    def info(self) -> ProblemInfo:
        return ProblemInfo(
            name=self.name, level=self.level, tags=list(self.tags), roofline=self.roofline,
            settings=self.settings, id=self.id,
        )  # fmt: skip


@lru_cache(maxsize=1)
def _stored_roofline() -> dict[str, dict[str, Any]]:
    try:
        return json.loads(ROOFLINE_FILE.read_text())
    except (OSError, ValueError):
        return {}


def iter_builtin_problems(level: int | None = None) -> Iterator[BuiltinProblem]:
    """Every built-in problem, by level then name."""
    for lvl, folder in sorted(LEVEL_DIRS.items()):
        if level is not None and lvl != level:
            continue
        for path in sorted((PROBLEMS_DIR / folder).glob("*.py")):
            if path.name.startswith("_"):
                continue
            source = path.read_text(encoding="utf-8")
            yield BuiltinProblem(path.stem, source, lvl, declared_tags(source) or [])


def get_builtin(name: str) -> BuiltinProblem:
    for problem in iter_builtin_problems():
        if problem.name == name:
            return problem
    raise KeyError(f"no built-in problem named {name!r}: `kjudge problems list` shows them")


# ---------------------------------------------------------------------------------------------
# Validation in a sandboxed child


class ValidationItem(BaseModel):
    name: str
    source: str
    level: int | None = None


class ValidationOutcome(BaseModel):
    name: str
    info: ProblemInfo | None = None
    rule: str | None = None
    message: str | None = None

    @property
    def ok(self) -> bool:
        return self.info is not None


def _child_env(scratch: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)),
        # One thread is plenty for a meta run and a small CPU run, and keeps imports cheap.
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }


def _killed_message(run: Any, limits: Any) -> tuple[str, str]:
    from evaluator.sandbox import MEMORY_LIMIT, describe

    text = describe(run, limits)
    if run.killed_reason == MEMORY_LIMIT:
        return "memory", f"ran out of memory ({text}): reduce the sizes"
    if run.timed_out or run.killed_reason == "wall_clock":
        return "timeout", f"did not finish loading and running within {limits.wall_s:g} s"
    tail = (run.stderr or "").strip().splitlines()[-3:]
    detail = text or f"exit status {run.returncode}" + (f", signal {run.signal}" if run.signal else "")
    if any("MemoryError" in line or "can't allocate memory" in line for line in tail):
        return "memory", "ran out of memory while loading or running: reduce the sizes"
    return "import", f"the problem stopped the validation process ({detail}): {' | '.join(tail)}"


def _run_child(
    items: Sequence[ValidationItem], *, timeout_s: float, memory_bytes: int, max_total_bytes: int
) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
    from evaluator.sandbox import Limits, run_sandboxed

    with tempfile.TemporaryDirectory(prefix="kjudge-probe-") as tmp:
        scratch = Path(tmp)
        report = scratch / "report.json"
        job = {
            "items": [i.model_dump() for i in items],
            "max_total_bytes": max_total_bytes,
            "report_path": str(report),
        }
        (scratch / "job.json").write_text(json.dumps(job))
        limits = Limits(wall_s=timeout_s, cpu_s=int(timeout_s * 2) + 30, memory_bytes=memory_bytes)
        run = run_sandboxed(
            [sys.executable, "-m", "problems.probe", str(scratch / "job.json")],
            scratch=scratch,
            limits=limits,
            gpu=False,
            env=_child_env(scratch),
            readonly_paths=[PROBLEMS_DIR],
        )
        if run.refused:
            raise ProblemRejected(f"kjudge could not start its sandbox to validate problems: {run.refused}")
        try:
            results = json.loads(report.read_text())["results"]
        except (OSError, ValueError, KeyError):
            results = []
        failure = None
        if run.returncode != 0 or run.timed_out or run.killed_reason:
            failure = _killed_message(run, limits)
        return results, failure


def _outcome(item: ValidationItem, raw: dict[str, Any]) -> ValidationOutcome:
    if raw.get("ok"):
        a = raw["analysis"]
        info = ProblemInfo(
            name=item.name,
            level=item.level,
            tags=a["tags"],
            roofline=a["roofline"],
            settings=a["settings"],
            id=hashlib.sha256(item.source.encode("utf-8")).hexdigest(),
        )
        return ValidationOutcome(name=item.name, info=info)
    return ValidationOutcome(name=item.name, rule=raw.get("rule"), message=raw.get("message"))


def validate_many(
    items: Sequence[ValidationItem],
    *,
    timeout_s: float | None = None,
    memory_bytes: int = DEFAULT_MEMORY_BYTES,
    max_total_bytes: int | None = None,
) -> list[ValidationOutcome]:
    """Validates a batch in one sandboxed child; a problem that kills the child is retried alone
    so that it does not take the others' verdicts with it."""
    from problems.analysis import DEFAULT_MAX_TOTAL_BYTES

    max_total = max_total_bytes or DEFAULT_MAX_TOTAL_BYTES
    pending = list(items)
    outcomes: dict[int, ValidationOutcome] = {}
    offset = 0
    while pending:
        budget = timeout_s or (DEFAULT_TIMEOUT_S + PER_ITEM_TIMEOUT_S * (len(pending) - 1))
        results, failure = _run_child(
            pending, timeout_s=budget, memory_bytes=memory_bytes, max_total_bytes=max_total
        )
        done = [r for r in results if "running" not in r]
        for i, raw in enumerate(done):
            outcomes[offset + i] = _outcome(pending[i], raw)
        if len(done) == len(pending):
            break
        # The child died on pending[len(done)]: that one gets the failure, the rest a new child.
        culprit = len(done)
        rule, message = failure or ("import", "the validation process ended without a report")
        outcomes[offset + culprit] = ValidationOutcome(name=pending[culprit].name, rule=rule, message=message)
        offset += culprit + 1
        pending = pending[culprit + 1 :]
    return [outcomes[i] for i in range(len(items))]


def validate_problem_source(
    source: str,
    name: str | None = None,
    *,
    level: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_bytes: int = DEFAULT_MEMORY_BYTES,
    max_total_bytes: int | None = None,
) -> ProblemInfo:
    """Loads and runs the problem in a sandboxed child (meta tensors at full size, then CPU at
    KJUDGE_SMALL sizes where declared). Raises ProblemRejected naming the rule broken."""
    name = name or "problem"
    try:  # the static checks first: no process for a syntax error
        Problem.from_source(source, name=name)
        declared_tags(source)
    except (ProblemError, ProblemLoadError) as exc:
        raise ProblemRejected(f"rule 'settings': {exc}", rule="settings") from None
    item = ValidationItem(name=name, source=source, level=level)
    (outcome,) = validate_many(
        [item], timeout_s=timeout_s, memory_bytes=memory_bytes, max_total_bytes=max_total_bytes
    )
    if outcome.info is None:
        raise ProblemRejected(f"rule '{outcome.rule}': {outcome.message}", rule=outcome.rule)
    return outcome.info


# ---------------------------------------------------------------------------------------------
# Maintaining problems/roofline.json


def compute_builtin_roofline() -> dict[str, dict[str, Any]]:
    """Analyses every built-in problem in this process (trusted code) and returns the
    roofline.json content."""
    from problems.analysis import analyse_source

    data: dict[str, dict[str, Any]] = {}
    for problem in iter_builtin_problems():
        analysis = analyse_source(problem.source, problem.name, level=problem.level)
        data[problem.name] = {"problem_id": problem.id, **analysis.roofline}
    return data


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m problems.catalog")
    parser.add_argument("--write-roofline", action="store_true", help=f"rewrite {ROOFLINE_FILE.name}")
    args = parser.parse_args(argv)
    if not args.write_roofline:
        parser.print_help()
        return 2
    data = compute_builtin_roofline()
    ROOFLINE_FILE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote roofline data of {len(data)} problems to {ROOFLINE_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
