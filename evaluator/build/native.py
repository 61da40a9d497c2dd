"""build_native: a raw cpp / cuda / hip source -> a Python extension module exposing `entry`.

Which toolchain a language takes on which target:

| language | cpu            | cuda (NVIDIA)                       | rocm (AMD)                      |
|----------|----------------|-------------------------------------|---------------------------------|
| cpp      | g++            | g++                                 | g++                             |
| cuda     | compile_error  | nvcc                                | PyTorch hipify -> hipcc         |
| hip      | compile_error  | HIP-on-CUDA translation -> nvcc     | hipcc                           |

The build itself runs in a sandboxed child (`python -m evaluator.build JOB.json`), so a compile
bomb costs only its own candidate; cache hits are answered without starting one.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from evaluator.build import binding, cache, lite
from evaluator.build.engine import build_spec, compile_to, lite_flavor, needs_pch, spec_key
from evaluator.build.models import BuildJob, BuildOutput, BuildSpec, Unit, UnitKind
from evaluator.build.pch import ensure_pch
from evaluator.build.toolchain import host_compiler, torch_info, use_torch_info
from evaluator.result import Backend, Language, Target
from evaluator.targets import cuda, hip_on_cuda, rocm


class PlanError(ValueError):
    """The submission cannot be built as asked; the message is for its author."""


def _device_source(source: str, language: Language, target: Target) -> tuple[str, UnitKind, bool]:
    """(code, unit kind, needs the HIP shim) for a cuda/hip source on a GPU target."""
    if target.backend is Backend.CUDA:
        if language is Language.HIP:
            try:
                translated = hip_on_cuda.translate(source)
            except hip_on_cuda.UnsupportedHip as exc:
                raise PlanError(str(exc)) from exc
            return f'#line 1 "submission.hip"\n{translated}', UnitKind.CUDA, True
        return f'#line 1 "submission.cu"\n{source}', UnitKind.CUDA, False
    if target.backend is Backend.ROCM:
        if language is Language.CUDA:
            return rocm.hipify_cuda_source(source), UnitKind.HIP, False
        return f'#line 1 "submission.hip"\n{source}', UnitKind.HIP, False
    raise PlanError(f"{language.value} sources need a GPU target (cuda or rocm), not {target.backend.value}")


def plan(source: str, language: Language, entry: str, target: Target) -> BuildSpec:
    """Turn a raw source into build units. Raises PlanError with a message for the author."""
    if language not in (Language.CPP, Language.CUDA, Language.HIP):
        raise PlanError(f"build_native builds cpp, cuda and hip sources, not {language.value}")
    if not entry.isidentifier():
        raise PlanError(f"entry must be a C++ function name, got {entry!r}")
    own_name = binding.module_name_in_source(source)
    if own_name is None and not binding.defines_function(source, entry):
        raise PlanError(
            f"the source defines no function `{entry}`: define `torch::Tensor {entry}(torch::Tensor ...)` "
            f"taking and returning tensors, or name your function with the submission's `entry`"
        )
    if own_name is not None and own_name != "TORCH_EXTENSION_NAME":
        module_name = own_name
    else:
        module_name = "kjudge_" + cache.content_key(source, language.value, entry)[:16]
    module_def = "" if own_name else "\n" + binding.module_definition({entry: entry})

    if language is Language.CPP:
        unit = Unit(name="submission.cpp", code=source + module_def, kind=UnitKind.CXX)
        lite_units = None
        if own_name is None and lite.eligible(source, UnitKind.CXX, target.backend):
            lite_units = [lite.lite_unit("submission.cpp", source, UnitKind.CXX, module_name, [entry])]
        return BuildSpec(module_name=module_name, units=[unit], target=target, lite_units=lite_units)

    code, kind, shim = _device_source(source, language, target)
    ext = ".cu" if kind is UnitKind.CUDA else ".hip"
    half_defines = language is Language.CUDA
    lite_units = None
    if own_name is None and lite.eligible(code, kind, target.backend):
        lite_units = [
            lite.lite_unit(
                "submission" + ext,
                code,
                kind,
                module_name,
                [entry],
                hip_shim=shim,
                torch_half_defines=half_defines,
            )
        ]
    merged = Unit(
        name="submission" + ext,
        code=code + module_def,
        kind=kind,
        hip_shim=shim,
        torch_half_defines=half_defines,
    )
    declaration = None if own_name else binding.entry_declaration(code, entry)
    if declaration is None:
        return BuildSpec(module_name=module_name, units=[merged], target=target, lite_units=lite_units)
    device = Unit(
        name="submission" + ext,
        code=code,
        kind=kind,
        hip_shim=shim,
        light_torch=binding.light_header_safe(code),
        torch_half_defines=half_defines,
    )
    glue = Unit(
        name="binding.cpp",
        code=binding.binding_unit_source([declaration], binding.file_scope_usings(code), {entry: entry}),
        kind=UnitKind.CXX,
        glue=True,
    )
    return BuildSpec(
        module_name=module_name,
        units=[device, glue],
        target=target,
        fallback_units=[merged],
        lite_units=lite_units,
    )


def _failed(message: str, start: float) -> BuildOutput:
    return BuildOutput(ok=False, log=message + "\n", message=message, seconds=time.monotonic() - start)


def _child_env() -> dict[str, str]:
    """A scrubbed environment: only what the compilers and the child's Python need."""
    repo_root = Path(__file__).resolve().parents[2]
    # The child imports exactly what the parent can (editable installs, wheels on PYTHONPATH).
    import_path = [str(repo_root), *(p for p in sys.path if p and os.path.isdir(p))]
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(import_path)),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    home = cuda.cuda_home()
    if home is not None:
        env["CUDA_HOME"] = str(home)
    rocm_dir = rocm.rocm_home()
    if rocm_dir is not None:
        env["ROCM_HOME"] = str(rocm_dir)
    return env


def _toolchain_paths(pch_dir: Path | None, lite_dir: Path | None) -> list[Path]:
    """What the compile child reads besides the system and Python: the shared PCH, the lite
    runtime, CUDA, ROCm."""
    paths = [d.resolve() for d in (pch_dir, lite_dir) if d is not None]
    for home in (cuda.cuda_home(), rocm.rocm_home()):
        # /usr is bound whole; binding onto a symlink (/usr/local/cuda) is an error in bwrap.
        if home is not None and Path("/usr") not in home.resolve().parents:
            paths.append(home.resolve())
    return paths


def _compile_sandboxed(
    spec: BuildSpec,
    cache_dir: Path,
    pch_dir: Path | None,
    lite_dir: Path | None,
    timeout_s: float,
    jobs: int | None,
) -> BuildOutput:
    from evaluator.sandbox import Limits, describe, run_sandboxed

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kjudge-build-") as scratch_name:
        scratch = Path(scratch_name)
        work = scratch / "work"
        work.mkdir()
        job = BuildJob(
            spec=spec,
            work_dir=work,
            pch_dir=pch_dir,
            lite_dir=lite_dir,
            report_path=scratch / "report.json",
            timeout_s=timeout_s,
            jobs=jobs,
            torch=torch_info(),
        )
        job_path = scratch / "job.json"
        job_path.write_text(job.model_dump_json())
        limits = Limits(wall_s=timeout_s + 10, cpu_s=int(timeout_s * 32) + 60)
        child_start = time.monotonic()
        run = run_sandboxed(
            [sys.executable, "-m", "evaluator.build", str(job_path)],
            scratch=scratch,
            limits=limits,
            gpu=False,
            env=_child_env() | {"HOME": str(scratch), "TMPDIR": str(scratch)},
            readonly_paths=_toolchain_paths(pch_dir, lite_dir),
        )
        if run.refused:
            return BuildOutput(
                ok=False, refused=run.refused, log=run.refused + "\n", message="no sandbox for the compile"
            )
        stopped = describe(run, limits)
        if run.timed_out:
            return _failed(f"compilation took longer than {timeout_s:.0f}s and was stopped", start)
        try:
            out = BuildOutput.model_validate_json(job.report_path.read_text())
        except (OSError, ValueError):
            detail = (run.stderr or run.stdout)[-4000:]
            return _failed(stopped or f"the compiler process died (exit {run.returncode}):\n{detail}", start)
        # The sandboxed child's whole life: its start and imports are this less the compilers'.
        out = out.model_copy(
            update={"steps_s": {**out.steps_s, "child": round(time.monotonic() - child_start, 4)}}
        )
        if not out.ok:
            return out
        key = spec_key(spec)
        with cache.staging_dir(cache_dir, key) as staged:
            return cache.publish(staged, cache_dir, key, out)


def build_native(
    source: str,
    language: Language,
    entry: str,
    target: Target,
    cache_dir: Path,
    timeout_s: float = 300,
    *,
    sandboxed: bool = True,
    jobs: int | None = None,
) -> BuildOutput:
    """Build (or fetch from the cache) the extension module for a raw cpp/cuda/hip submission.

    Never raises for anything the source did: compile errors come back as ok=False with the
    compiler's log and a one-line message. With `sandboxed`, the compilers run in a sandboxed
    child and only this (trusted) process writes to `cache_dir`.
    """
    start = time.monotonic()
    cache_dir = Path(cache_dir)
    try:
        spec = plan(source, language, entry, target)
    except PlanError as exc:
        return _failed(str(exc), start)
    if not sandboxed:
        return build_spec(spec, cache_dir, timeout_s=timeout_s, jobs=jobs)
    hit = cache.lookup(cache_dir, spec_key(spec))
    if hit is not None:
        return hit
    pch_dir, lite_dir, log = None, None, ""
    # Trusted input only (torch's headers, kjudge's own runtime and flags): built here, shared
    # read-only, and not on the candidate's budget.
    pch_start = time.monotonic()
    if needs_pch(spec):
        pch_dir, log = ensure_pch(cache_dir, host_compiler(), timeout_s=900)
    if spec.lite_units:
        lite_dir, lite_log = lite.ensure_runtime(cache_dir, lite_flavor(spec), timeout_s=900)
        log += lite_log
    pch_s = time.monotonic() - pch_start
    # The candidate's budget does not pay for the shared header: on a loaded host its first build
    # took more than the whole budget and left the candidate 1 s, a compile_error for an infra delay.
    budget = max(1.0, timeout_s - (time.monotonic() - start - pch_s))
    out = _compile_sandboxed(spec, cache_dir, pch_dir, lite_dir, budget, jobs)
    return out.model_copy(update={"log": log + out.log, "seconds": time.monotonic() - start})


def run_job(job_path: Path) -> int:
    """Entry of the sandboxed child: compile, write the report, exit 0 (the report says how it went)."""
    job = BuildJob.model_validate_json(Path(job_path).read_text())
    if job.torch is not None:
        use_torch_info(job.torch)
    out = compile_to(
        job.spec,
        job.work_dir,
        pch_dir=job.pch_dir,
        timeout_s=job.timeout_s,
        jobs=job.jobs,
        lite_dir=job.lite_dir,
    )
    job.report_path.write_text(out.model_dump_json())
    return 0
