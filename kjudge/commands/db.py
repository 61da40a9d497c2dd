"""`kjudge db upgrade|current|seed`: the service database's schema and built-in problems."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "db",
        help="database schema (Alembic) for the service",
        description="Uses KJUDGE_DATABASE_URL (default: SQLite under KJUDGE_HOME). Works from any directory.",
    )
    sub = p.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = sub.add_parser("upgrade", help="migrate to the newest schema and load the built-in problems")
    up.add_argument("revision", nargs="?", default="head")
    up.add_argument("--no-seed", action="store_true", help="do not load the built-in problems")
    up.set_defaults(handler=run_upgrade)
    cur = sub.add_parser("current", help="print the schema revision of the database")
    cur.set_defaults(handler=run_current)
    seed = sub.add_parser("seed", help="load the built-in problems (idempotent)")
    seed.set_defaults(handler=run_seed)


def _redacted(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - only for display
        return url


def run_upgrade(args: argparse.Namespace) -> int:
    from sqlalchemy import exc as sa_exc

    from core.settings import get_settings
    from db.migrate import upgrade

    settings = get_settings()
    try:
        upgrade(settings, args.revision)
    except sa_exc.OperationalError as exc:
        print(
            f"kjudge db: cannot reach {_redacted(settings.effective_database_url)}: {str(exc).splitlines()[0]}",
            file=sys.stderr,
        )
        return 1
    print(f"database {_redacted(settings.effective_database_url)} is at revision {args.revision}")
    if not args.no_seed and args.revision == "head":
        return run_seed(args)
    return 0


def run_current(args: argparse.Namespace) -> int:
    from db.migrate import current_revision, head_revision

    current = current_revision()
    print(f"current {current or '(empty database)'}; newest {head_revision()}")
    return 0


def run_seed(args: argparse.Namespace) -> int:
    from db.prepare import DatabaseNotReady, prepare_database
    from db.seed import seed_builtin_problems
    from db.session import get_sessionmaker

    try:
        # `db upgrade` migrated already; `db seed` alone creates/upgrades as serve does.
        prepare_database(migrate=getattr(args, "db_command", None) != "upgrade")
    except DatabaseNotReady as exc:
        print(f"kjudge db: {exc}", file=sys.stderr)
        return 1

    with get_sessionmaker()() as session:
        n = seed_builtin_problems(session)
    print(f"loaded {n} new built-in problems")
    return 0
