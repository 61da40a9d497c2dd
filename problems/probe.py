"""The sandboxed child that validates problems: `python -m problems.probe JOB.json`.

The job lists problems (name, source, level); the child analyses them one by one and rewrites
REPORT.json after each, so a kill (memory, wall clock) still leaves the earlier results and the
parent knows which problem was running when it happened.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel


class ProbeItem(BaseModel):
    name: str
    source: str
    level: int | None = None


class ProbeJob(BaseModel):
    items: list[ProbeItem]
    max_total_bytes: int
    report_path: str


def _write(path: Path, results: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"results": results}))
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    job = ProbeJob.model_validate_json(Path(argv[0]).read_text())
    report = Path(job.report_path)
    # Imported late so that the report path is known before torch's import can fail.
    from problems.analysis import RuleBroken, analyse_source

    results: list[dict[str, Any]] = []
    for item in job.items:
        results.append({"name": item.name, "running": True})
        _write(report, results)
        try:
            analysis = analyse_source(
                item.source, item.name, level=item.level, max_total_bytes=job.max_total_bytes
            )
            results[-1] = {"name": item.name, "ok": True, "analysis": analysis.model_dump(mode="json")}
        except RuleBroken as exc:
            results[-1] = {"name": item.name, "ok": False, "rule": exc.rule, "message": exc.message}
        except RecursionError as exc:
            results[-1] = {
                "name": item.name,
                "ok": False,
                "rule": "import",
                "message": f"RecursionError: {exc}",
            }
        _write(report, results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
