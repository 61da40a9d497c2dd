"""Loading the built-in problem library (problems.catalog) into the problems table."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from sqlalchemy.orm import Session

from db.models import Problem
from db.types import utcnow
from db.upsert import insert_ignore

log = logging.getLogger("kjudge.db")


def builtin_problem_rows() -> list[dict[str, Any]]:
    """Rows for every built-in problem; empty when the catalog is not installed."""
    try:
        from problems.catalog import iter_builtin_problems
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("problems"):
            log.info("problems.catalog is not installed; no built-in problems to load")
            return []
        raise
    now = utcnow()
    rows = []
    for problem in iter_builtin_problems():
        name, source, level, tags = problem[:4]
        rows.append(
            {
                "id": hashlib.sha256(source.encode("utf-8")).hexdigest(),
                "name": name,
                "source": source,
                "level": level,
                "tags": list(tags or []),
                # The catalog knows more than the (name, source, level, tags) contract; use it if so.
                "settings": _optional(problem, "settings"),
                "roofline": _optional(problem, "roofline"),
                "builtin": True,
                "created_at": now,
            }
        )
    return rows


def seed_builtin_problems(session: Session) -> int:
    """Inserts the built-in problems not yet stored (idempotent); returns how many were new."""
    inserted = insert_ignore(session, Problem, builtin_problem_rows())
    session.commit()
    return inserted


def _optional(problem: Any, attr: str) -> dict[str, Any]:
    try:
        value = getattr(problem, attr, None)
    except Exception as exc:  # noqa: BLE001 - a bad built-in must not stop the others loading
        log.warning("built-in problem %s: cannot read %s: %s", problem[0], attr, exc)
        return {}
    return dict(value) if value else {}
