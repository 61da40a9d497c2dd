"""`python -m evaluator.build JOB.json`: the sandboxed compile child (see native.build_native)."""

from __future__ import annotations

import sys
from pathlib import Path

from evaluator.build.native import run_job

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m evaluator.build JOB.json")
    sys.exit(run_job(Path(sys.argv[1])))
