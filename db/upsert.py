"""INSERT ... ON CONFLICT DO NOTHING on PostgreSQL and SQLite alike."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session


def insert_ignore(session: Session, model: Any, rows: list[dict[str, Any]]) -> int:
    """Inserts the rows whose key is new; returns how many were inserted."""
    if not rows:
        return 0
    dialect = session.get_bind().dialect.name
    table = model.__table__  # Core insert: the ORM bulk path reports no rowcount
    if dialect == "postgresql":
        stmt = postgresql.insert(table).on_conflict_do_nothing()
    elif dialect == "sqlite":
        stmt = sqlite.insert(table).on_conflict_do_nothing()
    else:  # pragma: no cover - only the two supported backends
        raise NotImplementedError(f"insert_ignore does not support {dialect}")
    # RETURNING counts what was inserted (rowcount is not reliable through the ORM session).
    stmt = stmt.returning(*table.primary_key.columns)
    inserted = 0
    for row in rows:
        inserted += len(session.execute(stmt.values(**_columns(model, row))).all())
    return inserted


def _columns(model: Any, row: dict[str, Any]) -> dict[str, Any]:
    """Attribute names (e.g. `meta`) → column names (e.g. `metadata`) for Core inserts."""
    mapper = sa.inspect(model)
    return {mapper.attrs[k].columns[0].name if k in mapper.attrs else k: v for k, v in row.items()}
