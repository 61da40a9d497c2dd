"""Build a KernelBench candidate's `load_inline`/`load` extensions ahead of its run, without a device.

A KernelBench candidate compiles when its module is imported. `python -m evaluator.build.ahead
JOB.json` imports it in a sandbox with no GPU, with the same load_inline shim, target and cache
the run child installs (evaluator/runner.py), so the builds land where the run will look them up
and the run only loads them. With `stub` facts in the job the import runs against the stand-in
torch (evaluator/build/stub_torch.py): the builds are made and published, never loaded, and
torch is never imported here. Nothing is decided here: an import that fails for anything but a
build (it touches the GPU at import, say) is left to the run, and so is a build that fails — the
run finds the failure remembered in the build cache and reports the compile error exactly as
without the pipeline.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evaluator.build.models import TrustedToolchain
from evaluator.build.toolchain import TorchInfo
from evaluator.result import Target

MODULE_NAME = "kjudge_candidate"  # what the run child names it (languages/python_module.py)
LOG_TAIL = 8000


class StubFacts(BaseModel):
    torch: TorchInfo
    torch_cuda: bool  # torch.version.cuda is set: lite CUDA units are tried
    inline_params: list[str]  # load_inline's and load's parameters in order, to bind positionals
    load_params: list[str]


class AheadJob(BaseModel):
    candidate_path: Path
    target: Target
    inline_cache: Path  # the run's native_cache_dir
    pch_cache: Path  # the run's pch_cache_dir (read-only here too)
    report_path: Path
    # Import under the stand-in torch (evaluator/build/stub_torch.py), with the parent's facts
    # about the real one: the child then never imports torch (5-8 s of a busy compile host).
    stub: StubFacts | None = None
    # The header and lite runtimes as the parent found them (evaluator/build/prepare.py).
    toolchain: TrustedToolchain | None = None


class AheadReport(BaseModel):
    builds: int = 0  # load_inline/load calls that returned a module
    build_error: str | None = None  # a build failed (the compiler's log tail)
    other_error: str | None = None  # the import failed for another reason
    stubbed: bool = False  # imported under the stand-in torch
    # Under the stand-in: the builds' steps (lite_units, lite_link, units, link; summed over the
    # builds) and whether every build took the lite torch API, so a result says where a
    # KernelBench compile went.
    steps_s: dict[str, float] = {}
    lite: bool | None = None
    not_lite_log: str = ""  # the head of a build's log that did not take the lite API


def run_job(job_path: Path) -> int:
    job = AheadJob.model_validate_json(job_path.read_text())
    report = _import_stubbed(job) if job.stub is not None else _import_with_torch(job)
    job.report_path.write_text(report.model_dump_json())
    return 0


def _import_stubbed(job: AheadJob) -> AheadReport:
    """Builds what the candidate's import asks for, the import run against the stand-in torch;
    the modules are built and published to the cache, never loaded."""
    from evaluator.build import lite, stub_torch
    from evaluator.build.engine import build_spec
    from evaluator.build.load_inline_shim import NativeBuildError, inline_spec, load_spec
    from evaluator.build.toolchain import use_torch_info

    assert job.stub is not None
    facts = job.stub
    use_torch_info(facts.torch)
    lite.use_torch_cuda(facts.torch_cuda)
    report = AheadReport(stubbed=True)

    def recorder(params: list[str], to_spec: Any) -> Any:
        def record(*args: Any, **kwargs: Any) -> Any:
            arguments = dict(zip(params, args, strict=False)) | kwargs
            spec = to_spec(job.target, arguments)
            out = build_spec(spec, job.inline_cache, trusted_pch_cache=job.pch_cache, trusted=job.toolchain)
            if not out.ok:
                raise NativeBuildError(spec.module_name, out.log)
            report.builds += 1
            for step, seconds in ({} if out.cached else out.steps_s).items():
                report.steps_s[step] = round(report.steps_s.get(step, 0.0) + seconds, 4)
            built_lite = "== built with the lite torch API" in out.log
            if not built_lite and not report.not_lite_log:
                report.not_lite_log = out.log[:1500]
            report.lite = built_lite if report.lite is None else report.lite and built_lite
            return stub_torch.Stub(spec.module_name)

        return record

    with stub_torch.recording(
        recorder(facts.inline_params, inline_spec), recorder(facts.load_params, load_spec)
    ):
        _exec_candidate(job, report)
    return report


def _import_with_torch(job: AheadJob) -> AheadReport:
    report = AheadReport()
    try:
        from torch.utils import cpp_extension

        from evaluator.build import install_load_inline_shim

        install_load_inline_shim(job.target, job.inline_cache, job.pch_cache)
        for name in ("load_inline", "load"):
            setattr(cpp_extension, name, _counting(getattr(cpp_extension, name), report))
    except BaseException as exc:  # noqa: BLE001 - whatever the candidate raised, report it
        report.other_error = f"{type(exc).__name__}: {str(exc)[:500]}"
        return report
    _exec_candidate(job, report)
    return report


def _exec_candidate(job: AheadJob, report: AheadReport) -> None:
    try:
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
