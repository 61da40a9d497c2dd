"""Is a failed build's error the source's own, whatever headers it is compiled against?

A unit that fails against the lite torch API (or the light <torch/extension.h>) is compiled
again with PyTorch's full headers in case the smaller header lacked something the source uses:
20-25 s of nvcc for a CUDA unit. When every error only says that a name is undefined, and none
of the headers that the fuller build adds so much as mentions that name, that build would fail
on the same names: its compile is skipped and the first log is the verdict's. Anything else (a
syntax error, a missing member, a name some header mentions, even in a comment) still gets the
fuller build.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

# An error line of nvcc (`x.cu(3): error: ...`, `error #20-D: ...`), gcc or clang (`x.cpp:3:5: error: ...`).
_ERROR_LINE = re.compile(r"\berror(?:\s*#\d+(?:-D)?)?\s*:")
_UNDEFINED = re.compile(
    r"identifier \"(?P<nvcc>\w+)\" is undefined"
    r"|[‘'](?P<gcc>\w+)[’'] was not declared in this scope"
    r"|use of undeclared identifier '(?P<clang>\w+)'"
)


def undefined_names(log: str) -> set[str] | None:
    """The names `log`'s errors call undefined, or None when some error is of another kind (or
    there is no error line to read)."""
    names: set[str] = set()
    for line in log.splitlines():
        if not _ERROR_LINE.search(line):
            continue
        match = _UNDEFINED.search(line)
        if match is None:
            return None
        names.add(next(name for name in match.groups() if name))
    return names or None


def mentioned_in(names: Iterable[str], header_dirs: Iterable[Path]) -> bool:
    """Whether any of `names` occurs as a word in a file under `header_dirs`. Can't tell (no
    grep, a read error) counts as mentioned: the fuller build then decides."""
    names = sorted(set(names))
    dirs = [str(d) for d in _outermost(header_dirs)]
    if not names:
        return False
    if not dirs:
        return True
    patterns = [arg for name in names for arg in ("-e", name)]
    try:
        found = subprocess.run(
            ["grep", "-rqwFI", "--no-messages", *patterns, *dirs], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return True
    return found.returncode != 1


def only_own_undefined_names(log: str, header_dirs: Iterable[Path]) -> bool:
    """True when every error in `log` is an undefined name that no file under `header_dirs` mentions."""
    names = undefined_names(log)
    return names is not None and not mentioned_in(names, header_dirs)


def _outermost(dirs: Iterable[Path]) -> list[Path]:
    """The existing directories, without those inside another one of them (searched once)."""
    resolved = sorted({d.resolve() for d in dirs if d.is_dir()}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for d in resolved:
        if not any(d.is_relative_to(k) for k in kept):
            kept.append(d)
    return kept
