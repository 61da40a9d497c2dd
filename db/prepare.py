"""Make the service database ready to write, before a command does any long work.

Every `kjudge` command that writes the database (serve, problems import, keys, db seed) calls
`prepare_database` first: it creates the SQLite file under KJUDGE_HOME (or uses
KJUDGE_DATABASE_URL), upgrades the schema to the newest revision as `kjudge serve` does, and
proves that a row can be written. A newcomer's first `kjudge problems import` used to validate
270 problems for minutes and only then fail on a database nobody had created.
"""

from __future__ import annotations

from sqlalchemy.engine import make_url

from core.settings import Settings, get_settings


class DatabaseNotReady(RuntimeError):
    """The database cannot be created, migrated or written; the message says which and why."""


def redacted(url: str) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - only for display
        return url


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def check_writable(settings: Settings) -> None:
    """Inserts a throw-away problem row and rolls it back: the same write the commands make,
    so a read-only file, a full disk or a missing INSERT privilege shows up now."""
    import sqlalchemy as sa

    from db.models import Problem
    from db.session import make_engine
    from db.types import utcnow

    engine = make_engine(settings.effective_database_url, pool_size=1, max_overflow=0)
    try:
        with engine.connect() as conn:
            trans = conn.begin()
            try:
                conn.execute(
                    sa.insert(Problem).values(
                        id="kjudge-write-probe",
                        name="kjudge-write-probe",
                        source="",
                        tags=[],
                        settings={},
                        roofline={},
                        builtin=False,
                        created_at=utcnow(),
                    )
                )
            finally:
                trans.rollback()
    finally:
        engine.dispose()


def prepare_database(settings: Settings | None = None, *, migrate: bool = True) -> str:
    """Creates/upgrades the database and checks that it takes writes. Returns its (redacted)
    URL for messages; raises DatabaseNotReady saying what failed."""
    settings = settings or get_settings()
    url = settings.effective_database_url
    shown = redacted(url)
    if settings.is_sqlite:
        try:
            settings.home_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseNotReady(f"cannot create KJUDGE_HOME {settings.home_dir}: {exc}") from exc
    if migrate:
        from db.migrate import upgrade

        try:
            upgrade(settings)
        except Exception as exc:  # noqa: BLE001 - any failure here is reported the same way
            raise DatabaseNotReady(
                f"cannot create or upgrade the database {shown}: {_first_line(exc)}"
            ) from exc
    try:
        check_writable(settings)
    except Exception as exc:  # noqa: BLE001
        raise DatabaseNotReady(f"cannot write to the database {shown}: {_first_line(exc)}") from exc
    return shown
