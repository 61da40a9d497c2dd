"""`kjudge keys create|list|revoke`: API keys, managed directly in the database (operators)."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("keys", help="manage API keys (talks to the database directly)")
    sub = p.add_subparsers(dest="keys_command", metavar="ACTION", required=True)

    c = sub.add_parser("create", help="create a key and print its secret (shown only once)")
    c.add_argument("--name", required=True, help="who or what the key is for")
    c.add_argument(
        "--scopes",
        default="submit,read",
        help="comma-separated: submit, read, problems:write, admin (default submit,read)",
    )
    c.add_argument("--rate-limit", type=int, default=None, help="requests per minute (default: the server's)")
    c.add_argument("--quota", type=int, default=None, help="total submissions allowed (default: unlimited)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(handler=run_create)

    ls = sub.add_parser("list", help="list keys (never their secrets)")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(handler=run_list)

    r = sub.add_parser("revoke", help="revoke a key by id")
    r.add_argument("id")
    r.set_defaults(handler=run_revoke)


def _prepare() -> int | None:
    """Creates/upgrades the database as `kjudge serve` does; an exit status when it cannot."""
    from db.prepare import DatabaseNotReady, prepare_database

    try:
        prepare_database()
    except DatabaseNotReady as exc:
        print(f"kjudge keys: {exc}", file=sys.stderr)
        return 1
    return None


def run_create(args: argparse.Namespace) -> int:
    from api.auth import create_key
    from db.session import session_scope

    if (failed := _prepare()) is not None:
        return failed
    scopes = [s.strip() for s in args.scopes.split(",") if s.strip()]
    try:
        with session_scope() as session:
            key, secret = create_key(session, args.name, scopes, args.rate_limit, args.quota)
            key_id = key.id
    except ValueError as exc:
        print(f"kjudge keys: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"id": key_id, "name": args.name, "scopes": scopes, "secret": secret}))
    else:
        print(f"created key {key_id} ({args.name}; scopes {', '.join(scopes)})")
        print(f"secret (shown only now; export it as KJUDGE_API_KEY): {secret}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from db.models import ApiKey
    from db.session import session_scope

    with session_scope() as session:
        keys = session.scalars(sa.select(ApiKey).order_by(ApiKey.created_at)).all()
        rows = [
            {
                "id": k.id,
                "name": k.name,
                "scopes": k.scopes,
                "rate_limit_per_min": k.rate_limit_per_min,
                "quota": k.quota,
                "used": k.used,
                "created_at": k.created_at.isoformat(),
                "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
            }
            for k in keys
        ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        state = "revoked" if r["revoked_at"] else "active"
        quota = f"{r['used']}/{r['quota']}" if r["quota"] is not None else "unlimited"
        print(f"{r['id']}  {state:7}  {r['name']:20}  {','.join(r['scopes']):30}  used {quota}")
    return 0


def run_revoke(args: argparse.Namespace) -> int:
    from api.auth import revoke_key
    from db.session import session_scope

    if (failed := _prepare()) is not None:
        return failed
    with session_scope() as session:
        ok = revoke_key(session, args.id)
    if not ok:
        print(f"kjudge keys: no active key with id {args.id}", file=sys.stderr)
        return 1
    print(f"revoked {args.id}")
    return 0
