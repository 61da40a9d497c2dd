"""Reading what a profiled run left in its scratch dir, in the parent.

Everything there was writable by the candidate while it ran: a file can be a symlink to a host
file the worker may read (its contents would then travel into the Result), a FIFO (the parent
would block on it), or huge. So: never follow a symlink (not the file, not a directory on the
way down), regular files only, a size cap.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

CAP = 16 << 20


def read_untrusted(path: Path, cap: int = CAP) -> str:
    """The text of a regular file at `path` (not a symlink), at most `cap` bytes; '' otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        chunks, left = [], cap
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks).decode("utf-8", errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


def walk_untrusted(root: Path) -> Iterator[Path]:
    """Regular files under `root`, descending into real directories only."""
    if root.is_symlink() or not root.is_dir():
        return
    for dirpath, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink() and path.is_file():
                yield path
