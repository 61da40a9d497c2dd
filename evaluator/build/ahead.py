"""Build a KernelBench candidate's `load_inline`/`load` extensions ahead of its run, without a device.

A KernelBench candidate compiles when its module is imported. `python -m evaluator.build.ahead
JOB.json` imports it in a sandbox with no GPU, with the same load_inline shim, target and cache
the run child installs (evaluator/runner.py), so the builds land where the run will look them up
and the run only loads them. Nothing is decided here: an import that fails for anything but a
build (it touches the GPU at import, say) is left to the run, and so is a build that fails — the
run reproduces it and reports the compile error exactly as without the pipeline.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from pydantic import BaseModel

from evaluator.result import Target

MODULE_NAME = "kjudge_candidate"  # what the run child names it (languages/python_module.py)
LOG_TAIL = 8000


class AheadJob(BaseModel):
    candidate_path: Path
    target: Target
    inline_cache: Path  # the run's native_cache_dir
    pch_cache: Path  # the run's pch_cache_dir (read-only here too)
    report_path: Path


class AheadReport(BaseModel):
    builds: int = 0  # load_inline/load calls that returned a module
    build_error: str | None = None  # a build failed (the compiler's log tail)
    other_error: str | None = None  # the import failed for another reason


def run_job(job_path: Path) -> int:
    job = AheadJob.model_validate_json(job_path.read_text())
    report = AheadReport()
    try:
        from torch.utils import cpp_extension

        from evaluator.build import install_load_inline_shim

        install_load_inline_shim(job.target, job.inline_cache, job.pch_cache)
        for name in ("load_inline", "load"):
            setattr(cpp_extension, name, _counting(getattr(cpp_extension, name), report))
        spec = importlib.util.spec_from_file_location(MODULE_NAME, job.candidate_path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[MODULE_NAME] = module
        spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - whatever the candidate raised, report it
        if type(exc).__name__ == "NativeBuildError":
            report.build_error = (getattr(exc, "log", None) or str(exc))[-LOG_TAIL:]
        else:
            report.other_error = f"{type(exc).__name__}: {str(exc)[:500]}"
    job.report_path.write_text(report.model_dump_json())
    return 0


def _counting(function: object, report: AheadReport) -> object:
    def call(*args: object, **kwargs: object) -> object:
        out = function(*args, **kwargs)  # type: ignore[operator]
        report.builds += 1
        return out

    call.__kjudge_original__ = getattr(function, "__kjudge_original__", function)  # type: ignore[attr-defined]
    return call


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m evaluator.build.ahead JOB.json")
    sys.exit(run_job(Path(sys.argv[1])))
