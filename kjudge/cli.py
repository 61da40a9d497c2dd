"""The `kjudge` command: a dispatcher over kjudge/commands/*.

Each command module defines `register(subparsers) -> None`, adding its parsers with
`set_defaults(handler=callable(args) -> int)`. Modules are imported only if present so that a
partial install (say, the evaluator alone on a GPU node) still answers `kjudge eval`.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Order is the order shown in --help.
COMMAND_MODULES = [
    "kjudge.commands.eval",
    "kjudge.commands.serve",
    "kjudge.commands.worker",
    "kjudge.commands.workers",
    "kjudge.commands.submit",
    "kjudge.commands.keys",
    "kjudge.commands.db",
    "kjudge.commands.problems",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kjudge", description="An online judge for GPU kernels.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # command group not installed in this build
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    return int(handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
