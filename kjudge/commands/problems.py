"""`kjudge problems list|show|import`: the problem library.

`list` and `show` read the built-in catalog and need no server or database. `import DIR` reads
a KernelBench checkout (its level1…level4 folders) or any folder of problem modules, validates
each problem in a sandboxed child, and stores the accepted ones in the service database
(KJUDGE_DATABASE_URL; default SQLite under KJUDGE_HOME). A problem's id is the SHA-256 of its
source, so an edited problem is a new row and old results keep pointing at the old one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

IMPORT_BATCH = 16  # problems validated per sandboxed child
_LEVEL_DIR = re.compile(r"^level(\d+)$")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "problems",
        help="list, show and import problems",
        description="The built-in problem library and importing KernelBench problems.",
    )
    sub = p.add_subparsers(dest="problems_command", metavar="ACTION", required=True)

    ls = sub.add_parser("list", help="the built-in problems with their roofline data (no server needed)")
    ls.add_argument("--level", type=int, help="only this level (1, 2 or 3)")
    ls.add_argument("--tag", help="only problems with this tag, e.g. matmul, fused, fp16")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(handler=run_list)

    show = sub.add_parser("show", help="a built-in problem's source, settings and roofline data")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=run_show)

    imp = sub.add_parser(
        "import",
        help="validate the problems in DIR and store them in the database",
        description="DIR is a KernelBench checkout (or its KernelBench/ folder) with level1…level4 "
        "folders, a single levelN folder, or any folder of problem modules.",
    )
    imp.add_argument("dir", type=Path)
    imp.add_argument("--level", type=int, help="level for a folder that is not named levelN")
    imp.add_argument("--tag", action="append", default=[], help="extra tag for every imported problem")
    imp.add_argument(
        "--max-gib", type=float, default=4.0, help="refuse problems whose tensors exceed this (default 4)"
    )
    imp.add_argument("--dry-run", action="store_true", help="validate only; write nothing")
    imp.add_argument("--json", action="store_true", help="print one JSON object per problem")
    imp.set_defaults(handler=run_import)


# ---------------------------------------------------------------------------------------------
# list / show


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _human_flops(n: float) -> str:
    if n <= 0:
        return "-"
    if n >= 1e12:
        return f"{n / 1e12:.2f} TFLOP"
    return f"{n / 1e9:.1f} GFLOP"


def _row(problem: Any) -> dict[str, Any]:
    roof = problem.roofline
    return {
        "name": problem.name,
        "level": problem.level,
        "id": problem.id,
        "tags": list(problem.tags),
        "bytes": roof.get("bytes"),
        "flops": roof.get("flops"),
        "intensity": roof.get("intensity"),
        "dtype": roof.get("dtype"),
        "kernels": sorted(problem.kernels),
    }


def run_list(args: argparse.Namespace) -> int:
    from problems.catalog import iter_builtin_problems

    rows = [
        _row(p) for p in iter_builtin_problems(level=args.level) if args.tag is None or args.tag in p.tags
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no built-in problem matches", file=sys.stderr)
        return 0
    header = ("name", "lvl", "bytes", "FLOPs", "FLOP/B", "dtype", "kernels", "tags")
    table = [
        (
            r["name"],
            str(r["level"]),
            _human_bytes(r["bytes"]) if r["bytes"] is not None else "?",
            _human_flops(r["flops"] or 0) if r["flops"] is not None else "?",
            f"{r['intensity']:.1f}" if r["intensity"] is not None else "?",
            r["dtype"] or "?",
            ",".join(r["kernels"]) or "-",
            ",".join(r["tags"]),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
    right = {2, 3, 4}
    for line in [header, *table]:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        print("  ".join(cells).rstrip())
    stale = [r["name"] for r in rows if r["bytes"] is None]
    print(f"\n{len(rows)} problems; bytes = inputs + parameters read once + outputs written once; "
          "FLOPs from PyTorch's FLOP counter (matmul/conv/attention only)")  # fmt: skip
    if stale:
        print(
            f"roofline data missing for {', '.join(stale)}: run `python -m problems.catalog --write-roofline`"
        )
    return 0


def run_show(args: argparse.Namespace) -> int:
    from problems.catalog import get_builtin

    try:
        problem = get_builtin(args.name)
    except KeyError as exc:
        print(f"kjudge problems: {exc.args[0]}", file=sys.stderr)
        return 2
    data = {**_row(problem), "settings": problem.settings, "roofline": problem.roofline}
    if args.json:
        print(json.dumps({**data, "source": problem.source}, indent=2))
        return 0
    print(f"# {problem.name} (level {problem.level}) id {problem.id}")
    print(f"# settings {json.dumps(problem.settings)}")
    roof = problem.roofline
    if roof:
        print(
            f"# roofline: {_human_bytes(roof['bytes'])} moved, {_human_flops(roof['flops'])}, {roof['dtype']}"
        )
    kernels = ", ".join(f"{lang}: {path}" for lang, path in sorted(problem.kernels.items()))
    print(f"# reference kernels: {kernels or 'none'}\n")
    print(problem.source)
    return 0


# ---------------------------------------------------------------------------------------------
# import


def discover(root: Path, level: int | None) -> list[tuple[Path, int | None]]:
    """(file, level) for every problem module under `root`, KernelBench layout or flat."""
    if (root / "KernelBench").is_dir() and not any(_LEVEL_DIR.match(d.name) for d in root.iterdir()):
        root = root / "KernelBench"  # the repository root of a KernelBench checkout
    level_dirs = sorted(
        (int(m.group(1)), d) for d in root.iterdir() if d.is_dir() and (m := _LEVEL_DIR.match(d.name))
    )
    if level_dirs:
        folders = [(d, lvl) for lvl, d in level_dirs]
    else:
        m = _LEVEL_DIR.match(root.name)
        folders = [(root, level if level is not None else (int(m.group(1)) if m else None))]
    found: list[tuple[Path, int | None]] = []
    for folder, lvl in folders:
        found += [(f, lvl) for f in sorted(folder.glob("*.py")) if not f.name.startswith("_")]
    return found


def _store(rows: Sequence[dict[str, Any]]) -> int:
    from db.models import Problem
    from db.session import session_scope
    from db.upsert import insert_ignore

    with session_scope() as session:
        return insert_ignore(session, Problem, list(rows))


def _stored_ids(ids: Sequence[str]) -> set[str]:
    """The ids among `ids` already in the database: a re-run skips them (resume)."""
    import sqlalchemy as sa

    from db.models import Problem
    from db.session import session_scope

    found: set[str] = set()
    with session_scope() as session:
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            found |= set(session.scalars(sa.select(Problem.id).where(Problem.id.in_(chunk))))
    return found


def _import_row(item: Any, info: Any, tags: Sequence[str]) -> dict[str, Any]:
    from db.types import utcnow

    return {
        "id": info.id,
        "name": item.name,
        "source": item.source,
        "level": item.level,
        "tags": sorted(set(info.tags) | set(tags)),
        "settings": info.settings,
        "roofline": info.roofline,
        "builtin": False,
        "created_at": utcnow(),
    }


def _progress(total: int, quiet: bool) -> Any:
    """A progress bar on stderr when it is a terminal; nothing under --json or in a pipe/log."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit="problem",
        desc="validating",
        file=sys.stderr,
        disable=True if quiet else None,  # None: tqdm turns itself off without a TTY
        dynamic_ncols=True,
    )


def run_import(args: argparse.Namespace) -> int:
    from problems.catalog import ValidationItem, validate_many

    root: Path = args.dir
    if not root.is_dir():
        print(f"kjudge problems import: {root} is not a directory", file=sys.stderr)
        return 2
    files = discover(root, args.level)
    if not files:
        print(f"kjudge problems import: no .py problem modules under {root}", file=sys.stderr)
        return 2
    # Before any long work: the database exists, is migrated and takes a write.
    if not args.dry_run:
        from db.prepare import DatabaseNotReady, prepare_database

        try:
            prepare_database()
        except DatabaseNotReady as exc:
            print(f"kjudge problems import: {exc}", file=sys.stderr)
            print("set KJUDGE_DATABASE_URL or KJUDGE_HOME to a database this user can write", file=sys.stderr)
            return 1
    items: list[ValidationItem] = []
    unreadable: list[tuple[Path, str]] = []
    for path, lvl in files:
        try:
            items.append(ValidationItem(name=path.stem, source=path.read_text(encoding="utf-8"), level=lvl))
        except (OSError, UnicodeDecodeError) as exc:
            unreadable.append((path, str(exc)))
    # Resume: a problem's id is the hash of its source, so one stored by an earlier (maybe
    # interrupted) import is skipped without validating it again.
    present: set[str] = set()
    if not args.dry_run:
        ids = [hashlib.sha256(i.source.encode("utf-8")).hexdigest() for i in items]
        present = _stored_ids(ids)
        items = [i for i, pid in zip(items, ids, strict=True) if pid not in present]
    print(
        f"validating {len(items)} problems from {root} (sandboxed, meta tensors + small CPU runs)"
        + (f"; {len(present)} already stored, skipped" if present else ""),
        file=sys.stderr,
    )
    outcomes = []
    inserted = 0
    with _progress(len(items), quiet=args.json) as bar:
        for start in range(0, len(items), IMPORT_BATCH):
            batch = items[start : start + IMPORT_BATCH]
            done = validate_many(batch, max_total_bytes=int(args.max_gib * (1 << 30)))
            outcomes += done
            # Stored batch by batch, so that an interrupted import keeps what it validated.
            rows = [
                _import_row(i, o.info, args.tag)
                for i, o in zip(batch, done, strict=True)
                if o.info is not None
            ]
            if rows and not args.dry_run:
                inserted += _store(rows)
            bar.update(len(batch))

    accepted = sum(1 for o in outcomes if o.info is not None)
    refused = [(i, o) for i, o in zip(items, outcomes, strict=True) if o.info is None]
    if args.json:
        for item, outcome in zip(items, outcomes, strict=True):
            print(json.dumps({"name": item.name, "level": item.level, "ok": outcome.ok, "id": outcome.info.id
                              if outcome.info else None, "rule": outcome.rule, "message": outcome.message}))  # fmt: skip
    else:
        for item, outcome in refused:
            print(f"refused {item.name} (level {item.level}): rule '{outcome.rule}': {outcome.message}")
        for path, why in unreadable:
            print(f"refused {path.name}: cannot read it as UTF-8 text: {why}")
    if args.dry_run:
        summary = f"{accepted} accepted (would store {accepted})"
    else:
        # Problems skipped as already stored were accepted by the import that stored them.
        total = accepted + len(present)
        summary = f"{total} accepted (stored {inserted} new, {total - inserted} already present)"
    print(f"{summary}, {len(refused) + len(unreadable)} refused", file=sys.stderr)
    return 0
