"""Alembic driven from code: `kjudge db upgrade` works from any directory and any database."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from core.settings import Settings, get_settings
from db.session import make_engine

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    # ConfigParser interpolation: a literal % in a password must be doubled.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(settings: Settings | None = None, revision: str = "head") -> None:
    command.upgrade(alembic_config((settings or get_settings()).effective_database_url), revision)


def downgrade(settings: Settings | None = None, revision: str = "base") -> None:
    command.downgrade(alembic_config((settings or get_settings()).effective_database_url), revision)


def current_revision(settings: Settings | None = None) -> str | None:
    engine = make_engine((settings or get_settings()).effective_database_url, pool_size=1, max_overflow=0)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def head_revision() -> str | None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return script.get_current_head()
