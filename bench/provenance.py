"""Where a benchmark result came from: the commit it measured (shared by every bench script)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def commit() -> str:
    """KJUDGE_COMMIT when given (the lent GPU gets a copy of the tree whose .git may name an
    older commit), else the checked-out commit."""
    if os.environ.get("KJUDGE_COMMIT"):
        return os.environ["KJUDGE_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        )
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"
