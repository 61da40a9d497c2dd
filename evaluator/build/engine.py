"""Compile a BuildSpec into a published extension module: units in parallel, then one link.

A build is a few translation units (typically the device unit through nvcc and the generated
binding through g++ with the precompiled torch header) compiled concurrently, then linked with
the host compiler. A light device unit that fails is retried once with the real torch headers
(the spec's fallback plan) before the error is reported.
"""

from __future__ import annotations

import contextlib
import functools
import re
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evaluator.build import cache, commands, lite, pch
from evaluator.build.models import BuildOutput, BuildSpec, TrustedToolchain, Unit, UnitKind
from evaluator.build.toolchain import (
    compiler_version,
    default_jobs,
    host_compiler,
    torch_defines,
    torch_info,
    torch_system_includes,
)
from evaluator.build.undefined_names import only_own_undefined_names
from evaluator.result import Backend
from evaluator.targets import cuda, rocm
from evaluator.targets.hip_on_cuda import shim_flags

SHADOW_INCLUDE = Path(__file__).parent / "shadow"
# How nvcc/hipcc report a name the light <torch/extension.h> may lack (torch::nn, py::, ...).
# Only then is the unit retried with the real header: a syntax error is not retried.
_MISSING_DECLARATION = re.compile(
    r"has no member|is not a member|is undefined|was not declared|not declared in this scope|"
    r"incomplete type|no template named|unknown type name|does not name a type|"
    r"has already been defined|redefinition of|"
    r"no instance of (?:overloaded )?function \"(?:torch|at|c10)::|no matching function for call to '(?:torch|at|c10)::"
)

# A failure that says nothing about the source (what _compile reports for a timeout, a missing
# tool or a killed compiler): such a build is not remembered as failed.
_TRANSIENT_FAILURE = re.compile(r"^(compiler timed out after|could not run |compiler killed by signal)", re.M)


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(1.0, self.end - time.monotonic())


def spec_key(spec: BuildSpec) -> str:
    """Cache key: the spec (sources, flags, target arch) plus the toolchain that turns it into code."""
    info = torch_info()
    tools = [host_compiler(), compiler_version(host_compiler())]
    if any(u.kind is UnitKind.CUDA for u in spec.units):
        tools.append(compiler_version(cuda.nvcc_path()))
    if any(u.kind is UnitKind.HIP for u in spec.units):
        tools.append(compiler_version(rocm.hipcc_path()))
    # The host flags too: a module built with other flags (before -fopenmp) is another module.
    return cache.content_key(
        "module",
        spec.model_dump(mode="json"),
        info.model_dump(),
        tools,
        commands.pch_flags(info),
        lite.fingerprint() if spec.lite_units else "",
    )


def lite_flavor(spec: BuildSpec) -> Backend:
    """Which lite runtime a spec's lite units link: the CUDA one for a CUDA unit, else the CPU one."""
    return Backend.CUDA if any(u.kind is UnitKind.CUDA for u in spec.lite_units or []) else Backend.CPU


def _device_command(unit: Unit, spec: BuildSpec, source: Path, output: Path) -> list[str]:
    info = torch_info()
    includes = [f"-I{p}" for p in spec.extra_include_paths]
    if unit.lite:
        lite_includes, lite_defines = lite.unit_flags(unit)
        includes = lite_includes + includes
        defines = [f"-D_GLIBCXX_USE_CXX11_ABI={info.cxx11_abi}", *lite_defines]
    else:
        if unit.light_torch:
            includes = [f"-I{SHADOW_INCLUDE}", *includes]
        includes += torch_system_includes(info)
        defines = torch_defines(info, spec.module_name)
    extra = list(spec.extra_cuda_cflags)
    if unit.kind is UnitKind.CUDA:
        if unit.torch_half_defines:
            defines += cuda.TORCH_NVCC_DEFINES
        if unit.hip_shim:
            extra += shim_flags(unit.code)
        return cuda.nvcc_compile_command(
            source=source,
            output=output,
            target=spec.target,
            cxx_std=lite.CUDA_CXX_STD if unit.lite else info.cxx_std,
            includes=includes + cuda.include_flags(),
            defines=defines,
            extra=extra,
        )
    if unit.torch_half_defines:
        defines += rocm.TORCH_HIP_HALF_DEFINES
    return rocm.hipcc_compile_command(
        source=source,
        output=output,
        target=spec.target,
        cxx_std=info.cxx_std,
        includes=includes,
        defines=defines,
        extra=extra,
    )


def _compile(cmd: list[str], timeout_s: float) -> tuple[bool, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"compiler timed out after {timeout_s:.0f}s\n"
    except OSError as exc:
        return False, f"could not run {cmd[0]}: {exc}\n"
    if proc.returncode < 0:  # killed (the memory cap, say): the host's state, not the source's
        return False, proc.stdout + proc.stderr + f"\ncompiler killed by signal {-proc.returncode}\n"
    return proc.returncode == 0, proc.stdout + proc.stderr


def _compile_units(
    units: list[Unit], spec: BuildSpec, work: Path, pch_dir: Path | None, jobs: int, deadline: _Deadline
) -> tuple[list[Path], dict[str, tuple[bool, str]]]:
    info = torch_info()
    cxx = host_compiler()
    commands_by_unit: dict[str, list[str]] = {}
    objects = []
    for unit in units:
        source = work / unit.name
        source.write_text(unit.code)
        obj = work / (unit.name + ".o")
        objects.append(obj)
        if unit.kind is UnitKind.CXX and unit.lite:
            includes = [f"-I{p}" for p in spec.extra_include_paths]
            commands_by_unit[unit.name] = lite.cxx_command(unit, source, obj, [*includes, *spec.extra_cflags])
        elif unit.kind is UnitKind.CXX:
            commands_by_unit[unit.name] = commands.cxx_compile_command(
                cxx,
                info,
                source=source,
                output=obj,
                module_name=spec.module_name,
                pch_dir=pch_dir,
                includes=[f"-I{p}" for p in spec.extra_include_paths],
                extra=[*(["-O1"] if unit.glue else []), *spec.extra_cflags],
            )
        else:
            commands_by_unit[unit.name] = _device_command(unit, spec, source, obj)
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(units)))) as pool:
        futures = {
            name: pool.submit(_compile, cmd, deadline.left()) for name, cmd in commands_by_unit.items()
        }
        results = {name: f.result() for name, f in futures.items()}
    return objects, results


def _link_flags(spec: BuildSpec, units: list[Unit]) -> list[str]:
    info = torch_info()
    libs = {p.name[3:-3] for p in Path(info.library_dir).glob("lib*.so")}
    if spec.target.backend is Backend.CUDA and any(u.kind is UnitKind.CUDA for u in units):
        return cuda.link_flags(info.library_dir, libs)
    if spec.target.backend is Backend.ROCM and any(u.kind is UnitKind.HIP for u in units):
        return rocm.link_flags(info.library_dir, libs)
    return []


def _link(
    spec: BuildSpec, units: list[Unit], objects: list[Path], work: Path, deadline: _Deadline
) -> tuple[bool, Path, str]:
    module_path = work / f"{spec.module_name}.so"
    link = commands.link_command(
        host_compiler(),
        torch_info(),
        objects=objects,
        output=module_path,
        backend_flags=_link_flags(spec, units),
        extra=list(spec.extra_ldflags),
    )
    ok, link_log = _compile(link, deadline.left())
    log = f"== link: {'ok' if ok else 'FAILED'}\n{link_log.strip()}\n" if link_log.strip() else ""
    return ok, module_path, log


def _fuller_headers(units: list[Unit]) -> list[Path]:
    """What a regular build adds to a lite or light unit's headers: PyTorch's, Python's, the
    toolkit's (a lite CUDA unit sees fewer of them than torch's pull in) and the system's and
    compiler's (torch's headers include <cstring> and the like, so a name such as `strtok`
    builds there without the source including it)."""
    info = torch_info()
    dirs = [Path(d) for d in [*info.include_dirs, info.python_include, *_system_include_dirs()]]
    homes = {
        UnitKind.CUDA: cuda.cuda_home,
        UnitKind.HIP: rocm.rocm_home,
    }
    for kind in {u.kind for u in units} & homes.keys():
        home = homes[kind]()
        if home is not None:
            dirs.append(home / "include")
    return dirs


@functools.lru_cache(maxsize=1)
def _system_include_dirs() -> tuple[Path, ...]:
    dirs = [Path("/usr/include"), Path("/usr/local/include")]
    try:
        found = subprocess.run(
            [host_compiler(), "-print-file-name=include"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        found = ""
    return tuple(dirs + ([Path(found)] if found.startswith("/") else []))


def _source_own_errors(results: dict[str, tuple[bool, str]], units: list[Unit]) -> bool:
    """The failed units' errors are all names no fuller header mentions: a regular build of the
    same source fails the same way (evaluator/build/undefined_names.py)."""
    failed = "\n".join(text for ok, text in results.values() if not ok)
    return bool(failed) and only_own_undefined_names(failed, _fuller_headers(units))


def _compile_lite(
    spec: BuildSpec, work: Path, lite_dir: Path, jobs: int, deadline: _Deadline, steps: dict[str, float]
) -> tuple[Path | None, str, bool]:
    """The lite attempt: (module path, log, False) when it built, (None, why not, final) when it
    did not; final: the source's own error, which a regular build would only repeat."""
    units = spec.lite_units or []
    lite_work = work / "lite"
    lite_work.mkdir(exist_ok=True)
    with timed_step(steps, "lite_units"):
        objects, results = _compile_units(units, spec, lite_work, None, jobs, deadline)
    if not all(ok for ok, _ in results.values()):
        return None, _format_log(results), _source_own_errors(results, units)
    module_path = work / f"{spec.module_name}.so"
    with timed_step(steps, "lite_link"):
        ok, link_log = _compile(
            lite.link_command(objects, module_path, lite_dir, lite_flavor(spec)), deadline.left()
        )
    link_log = f"== link: {'ok' if ok else 'FAILED'}\n{link_log.strip()}\n" if link_log.strip() else ""
    return (module_path if ok else None), _format_log(results) + link_log, False


@contextlib.contextmanager
def timed_step(steps: dict[str, float], name: str) -> Iterator[None]:
    """Adds the block's wall seconds to steps[name] (a retried step counts once, summed)."""
    start = time.monotonic()
    try:
        yield
    finally:
        steps[name] = round(steps.get(name, 0.0) + time.monotonic() - start, 4)


def _format_log(results: dict[str, tuple[bool, str]]) -> str:
    parts = []
    for name, (ok, text) in results.items():
        if text.strip() or not ok:
            parts.append(f"== {name}: {'ok' if ok else 'FAILED'}\n{text.strip()}\n")
    return "".join(parts)


def compile_to(
    spec: BuildSpec,
    work: Path,
    *,
    pch_dir: Path | None,
    timeout_s: float = 300,
    jobs: int | None = None,
    lite_dir: Path | None = None,
) -> BuildOutput:
    """Compile and link `spec` inside `work` (no cache involved). Never raises for a compile error.

    With `lite_dir` (the lite runtime's directory) and lite units, those are tried first; if
    they do not build, the regular units are, and only their log speaks for the source."""
    start = time.monotonic()
    deadline = _Deadline(timeout_s)
    jobs = jobs or default_jobs()
    log = ""
    steps: dict[str, float] = {}
    if spec.lite_units and lite_dir is not None:
        module_path, lite_log, final = _compile_lite(spec, work, lite_dir, jobs, deadline, steps)
        if module_path is not None:
            return BuildOutput(
                ok=True,
                module_path=module_path,
                module_name=spec.module_name,
                log="== built with the lite torch API\n" + lite_log,
                seconds=time.monotonic() - start,
                steps_s=steps,
            )
        if final:
            return BuildOutput(
                ok=False,
                log="== every error names something no PyTorch or toolkit header declares: "
                "not built again with PyTorch's headers\n" + lite_log,
                seconds=time.monotonic() - start,
                message="compilation failed; see logs.compile",
                steps_s=steps,
            )
        log = "== the lite torch API could not build this source; building with PyTorch's headers\n"
    units = spec.units
    with timed_step(steps, "units"):
        objects, results = _compile_units(units, spec, work, pch_dir, jobs, deadline)
    log += _format_log(results)
    light_failed = any(
        not results[u.name][0] and u.light_torch and _MISSING_DECLARATION.search(results[u.name][1])
        for u in units
    ) and not _source_own_errors(results, units)
    if light_failed and spec.fallback_units is not None:
        log += "== retrying with the full <torch/extension.h>\n"
        units = spec.fallback_units
        with timed_step(steps, "units"):
            objects, results = _compile_units(units, spec, work, pch_dir, jobs, deadline)
        log += _format_log(results)
    if not all(ok for ok, _ in results.values()):
        failed = "".join(text for ok, text in results.values() if not ok)
        return BuildOutput(
            ok=False,
            log=log,
            seconds=time.monotonic() - start,
            message="compilation failed; see logs.compile",
            transient=_TRANSIENT_FAILURE.search(failed) is not None,
            steps_s=steps,
        )
    with timed_step(steps, "link"):
        ok, module_path, link_log = _link(spec, units, objects, work, deadline)
    log += link_log
    if not ok:
        return BuildOutput(
            ok=False,
            log=log,
            seconds=time.monotonic() - start,
            message="linking failed; see logs.compile",
            transient=_TRANSIENT_FAILURE.search(link_log) is not None,
            steps_s=steps,
        )
    return BuildOutput(
        ok=True,
        module_path=module_path,
        module_name=spec.module_name,
        log=log,
        seconds=time.monotonic() - start,
        steps_s=steps,
    )


def needs_pch(spec: BuildSpec) -> bool:
    return any(u.kind is UnitKind.CXX for u in [*spec.units, *(spec.fallback_units or [])])


def build_spec(
    spec: BuildSpec,
    cache_dir: Path,
    *,
    timeout_s: float = 300,
    jobs: int | None = None,
    trusted_pch_cache: Path | None = None,
    trusted: TrustedToolchain | None = None,
) -> BuildOutput:
    """Build `spec` in this process (or return the cached module) and publish it to the cache.

    `trusted_pch_cache`: a cache directory whose precompiled header the trusted parent built
    (read-only here); the build uses it if it is there and never builds one of its own, so that
    a candidate's process (load_inline in a run sandbox) cannot plant a header for later builds.
    The lite runtime likewise: taken from there, never built here. `trusted` names both as the
    parent found them (then nothing is looked up). Without either, both are built under
    `cache_dir` when missing."""
    start = time.monotonic()
    key = spec_key(spec)
    hit = cache.lookup(cache_dir, key)
    if hit is not None:
        return hit
    pch_dir, log = None, ""
    lite_dir: Path | None = None
    pch_s = 0.0  # building the shared header (and the lite runtime) is not this build's time
    if trusted_pch_cache is not None:
        if needs_pch(spec):
            pch_dir = (
                trusted.pch_dir if trusted is not None else pch.find_pch(trusted_pch_cache, host_compiler())
            )
            log = (
                ""
                if pch_dir is not None
                else f"no precompiled header from the parent for {host_compiler()}; building without it\n"
            )
        if spec.lite_units:
            flavor = lite_flavor(spec)
            lite_dir = (
                trusted.lite.get(flavor.value)
                if trusted is not None
                else lite.find_runtime(trusted_pch_cache, flavor)
            )
            if lite_dir is None:
                log += "no lite runtime from the parent; building with PyTorch's headers\n"
    else:
        pch_start = time.monotonic()
        if needs_pch(spec):
            pch_dir, log = pch.ensure_pch(cache_dir, host_compiler(), timeout_s=timeout_s)
        if spec.lite_units:
            lite_dir, lite_log = lite.ensure_runtime(cache_dir, lite_flavor(spec), timeout_s=timeout_s)
            log += lite_log
        pch_s = time.monotonic() - pch_start
    with cache.staging_dir(cache_dir, key) as work:
        left = max(1.0, timeout_s - (time.monotonic() - start - pch_s))
        out = compile_to(spec, work, pch_dir=pch_dir, timeout_s=left, jobs=jobs, lite_dir=lite_dir)
        out = out.model_copy(update={"log": log + out.log, "seconds": time.monotonic() - start})
        if out.ok:
            return cache.publish(work, cache_dir, key, out)
        # The same spec fails the same way: the run of a candidate whose build failed ahead of
        # it (evaluator/build/ahead.py) reports the error from here instead of compiling again.
        return out if out.transient else cache.publish_failure(cache_dir, key, out)
