"""The load_inline / load shim for KernelBench-format candidates.

A KernelBench candidate calls `torch.utils.cpp_extension.load_inline(...)` (or `load`) at import.
PyTorch's builder compiles for every architecture in TORCH_CUDA_ARCH_LIST, parses
<torch/extension.h> in nvcc, and took 61.4 s for one small ReLU on the H100 box. The runner calls
`install_load_inline_shim(target, cache_dir)` before importing the candidate; the patched
functions then
- build through kjudge's engine: the device arch only, the pybind11 binding in a host unit with a
  precompiled torch header, units in parallel, modules cached by content under cache_dir;
- on NVIDIA, translate HIP (KernelBench's HIP prompt: HIP in cpp_sources, CXX=hipcc) to CUDA;
- on ROCm, hand the call to PyTorch's own builder with PYTORCH_ROCM_ARCH set to the device arch
  (hipcc there is the real thing), in a build directory keyed by content.
Build failures raise NativeBuildError (a RuntimeError, like PyTorch's) carrying the log.
"""

from __future__ import annotations

import inspect
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluator.build import binding, cache, lite
from evaluator.build.engine import build_spec
from evaluator.build.loader import import_extension
from evaluator.build.models import BuildSpec, Unit, UnitKind
from evaluator.result import Backend, Target
from evaluator.targets import hip_on_cuda, rocm

_DEVICE_CODE = re.compile(r"__global__|<<<|\bhipLaunchKernelGGL\b|__device__")
_ARCH_FLAG = re.compile(
    r"^(-arch|--gpu-architecture|-code|--gpu-code|-gencode|--generate-code|--offload-arch)(=|$)"
)


class NativeBuildError(RuntimeError):
    """A candidate's load_inline/load build failed; `log` holds the compiler output."""

    def __init__(self, name: str, log: str) -> None:
        super().__init__(f"Error building extension '{name}':\n{log}")
        self.log = log


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def strip_arch_flags(flags: list[str]) -> list[str]:
    """Drop the candidate's own architecture flags: kjudge builds for the device's arch only."""
    kept: list[str] = []
    skip_next = False
    for flag in flags:
        if skip_next:
            skip_next = False
            continue
        match = _ARCH_FLAG.match(flag)
        if match:
            skip_next = match.group(2) == ""  # "-gencode X" takes the next argument
            continue
        kept.append(flag)
    return kept


def _host_flags_for_nvcc(flags: list[str]) -> list[str]:
    """extra_cflags meant for g++, passed through nvcc to its host compiler (-O3 stays an nvcc flag)."""
    out: list[str] = []
    for flag in flags:
        if re.fullmatch(r"-O[0-3s]?", flag):
            out.append(flag)
        else:
            out += ["-Xcompiler", flag]
    return out


def is_hip_request(sources: list[str]) -> bool:
    """KernelBench's HIP prompt sets CXX=hipcc; otherwise recognise HIP by its headers and calls."""
    cxx = os.environ.get("CXX", "").strip()
    if cxx and Path(shlex.split(cxx)[0]).name.startswith("hipcc"):
        return True
    return any(hip_on_cuda.looks_like_hip(s) for s in sources)


def plan_inline(
    target: Target,
    name: str,
    cpp_sources: list[str],
    cuda_sources: list[str],
    functions: dict[str, str] | None,
    *,
    extra_cflags: list[str],
    extra_cuda_cflags: list[str],
    extra_ldflags: list[str],
    extra_include_paths: list[str],
    with_pytorch_error_handling: bool = True,
    no_implicit_headers: bool = False,
) -> BuildSpec:
    """The units PyTorch's load_inline would build, laid out for speed (see module docstring)."""
    hip = is_hip_request(cpp_sources + cuda_sources)
    cpp_parts = ([] if no_implicit_headers else ["#include <torch/extension.h>"]) + cpp_sources
    cpp_code = "\n".join(cpp_parts)
    cuda_code = light_cuda_code = ""
    if cuda_sources:
        runtime = ["#include <cuda.h>", "#include <cuda_runtime.h>"]
        head = [] if no_implicit_headers else ["#include <torch/types.h>", *runtime]
        cuda_code = "\n".join(head + cuda_sources)
        # PyTorch prepends <torch/types.h> (all of ATen); the light path prepends the shadowed
        # <torch/extension.h> instead, which has what kernels' host code uses (build/shadow/).
        if not no_implicit_headers and binding.light_header_safe("\n".join(cuda_sources)):
            light_cuda_code = "\n".join(["#include <torch/extension.h>", *runtime, *cuda_sources])
    if hip and target.backend is Backend.CUDA:
        try:
            cpp_code = hip_on_cuda.translate(cpp_code)
            cuda_code = hip_on_cuda.translate(cuda_code) if cuda_code else ""
            light_cuda_code = hip_on_cuda.translate(light_cuda_code) if light_cuda_code else ""
        except hip_on_cuda.UnsupportedHip as exc:
            raise NativeBuildError(name, str(exc)) from exc
    module_def = (
        binding.module_definition(functions, wrap_errors=with_pytorch_error_handling) if functions else ""
    )
    gpu = target.backend is Backend.CUDA
    device_code = (
        bool(cuda_code) or _DEVICE_CODE.search(binding.mask_comments_and_strings(cpp_code)) is not None
    )
    device_kind = UnitKind.CUDA
    host_as_nvcc = _host_flags_for_nvcc(extra_cflags)
    cuda_flags = strip_arch_flags(extra_cuda_cflags)

    units: list[Unit] = []
    fallback: list[Unit] = []
    if gpu and _DEVICE_CODE.search(binding.mask_comments_and_strings(cpp_code)):
        # HIP kernels in cpp_sources (KernelBench's HIP prompt): the .cpp must go through nvcc.
        # Its binding goes to a host unit when every bound function's signature can be read.
        decls = [binding.entry_declaration(cpp_code, f) for f in (functions or {})]
        merged = Unit(
            name="main.cu",
            code=cpp_code + "\n" + module_def,
            kind=device_kind,
            hip_shim=hip,
            torch_half_defines=not hip,
        )
        if functions and all(decls):
            units.append(
                Unit(
                    name="main.cu",
                    code=cpp_code,
                    kind=device_kind,
                    hip_shim=hip,
                    light_torch=binding.light_header_safe(cpp_code),
                    torch_half_defines=not hip,
                )
            )
            units.append(
                Unit(
                    name="binding.cpp",
                    code=binding.binding_unit_source(
                        [d for d in decls if d], binding.file_scope_usings(cpp_code), functions
                    ),
                    kind=UnitKind.CXX,
                    glue=True,
                )
            )
            fallback.append(merged)
        else:
            units.append(merged)
            fallback.append(merged)
        cuda_flags = host_as_nvcc + cuda_flags
    else:
        host = Unit(name="main.cpp", code=cpp_code + "\n" + module_def, kind=UnitKind.CXX)
        units.append(host)
        fallback.append(host)
    if cuda_code:
        if not gpu:
            raise NativeBuildError(
                name, f"cuda_sources need a GPU target; this target is {target.backend.value}"
            )
        light = bool(light_cuda_code) or binding.light_header_safe(cuda_code)
        units.append(
            Unit(
                name="cuda.cu",
                code=light_cuda_code or cuda_code,
                kind=device_kind,
                hip_shim=hip,
                light_torch=light,
                torch_half_defines=not hip,
            )
        )
        fallback.append(
            Unit(name="cuda.cu", code=cuda_code, kind=device_kind, hip_shim=hip, torch_half_defines=not hip)
        )
    return BuildSpec(
        module_name=name,
        units=units,
        target=target,
        extra_cflags=extra_cflags,
        extra_cuda_cflags=cuda_flags,
        extra_ldflags=extra_ldflags,
        extra_include_paths=extra_include_paths,
        fallback_units=fallback if any(u.light_torch for u in units) else None,
        lite_units=_lite_units(name, cpp_code, cuda_code, functions, gpu and device_code, hip, target),
    )


def _lite_units(
    name: str,
    cpp_code: str,
    cuda_code: str,
    functions: dict[str, str] | None,
    device: bool,
    hip: bool,
    target: Target,
) -> list[Unit] | None:
    """One unit of both sources against the lite torch API (evaluator/build/lite.py): the
    declarations in cpp_sources come before the definitions in cuda_sources, as in PyTorch's
    two units. None where the sources bind themselves (no `functions`) or use more of torch."""
    if not functions:
        return None
    code = "\n".join(part for part in (cpp_code, cuda_code) if part)
    kind = UnitKind.CUDA if device else UnitKind.CXX
    if not lite.eligible(code, kind, target.backend):
        return None
    ext = ".cu" if device else ".cpp"
    return [
        lite.lite_unit(
            "main" + ext,
            code,
            kind,
            name,
            list(functions),
            hip_shim=hip and device,
            torch_half_defines=not hip,
        )
    ]


def plan_load(
    target: Target,
    name: str,
    sources: list[str],
    *,
    extra_cflags: list[str],
    extra_cuda_cflags: list[str],
    extra_ldflags: list[str],
    extra_include_paths: list[str],
) -> BuildSpec:
    """`load(name, sources=[files])`: each file one unit, by extension and content."""
    units = []
    texts = [Path(s).read_text() for s in sources]
    hip = is_hip_request(texts)
    gpu = target.backend is Backend.CUDA
    for index, (path, text) in enumerate(zip(sources, texts, strict=True)):
        suffix = Path(path).suffix
        device = suffix in (".cu", ".hip", ".cuh") or (hip and _DEVICE_CODE.search(text) is not None)
        stem = f"{index}_{Path(path).stem}"
        if device and not gpu:
            raise NativeBuildError(name, f"{path} is device code; this target is {target.backend.value}")
        if device:
            code = hip_on_cuda.translate(text) if hip else text
            units.append(
                Unit(
                    name=stem + ".cu", code=code, kind=UnitKind.CUDA, hip_shim=hip, torch_half_defines=not hip
                )
            )
        else:
            units.append(Unit(name=stem + ".cpp", code=text, kind=UnitKind.CXX))
    return BuildSpec(
        module_name=name,
        units=units,
        target=target,
        extra_cflags=extra_cflags,
        extra_cuda_cflags=strip_arch_flags(extra_cuda_cflags),
        extra_ldflags=extra_ldflags,
        extra_include_paths=[str(Path(p).resolve()) for p in extra_include_paths],
    )


def _load_built(
    spec: BuildSpec, cache_dir: Path, pch_cache: Path | None, is_python_module: bool, verbose: bool
) -> Any:
    out = build_spec(spec, cache_dir, trusted_pch_cache=pch_cache)
    if verbose:
        print(out.log)
    if not out.ok or out.module_path is None:
        raise NativeBuildError(spec.module_name, out.log)
    if not is_python_module:
        import torch

        torch.ops.load_library(str(out.module_path))
        return str(out.module_path)
    return import_extension(spec.module_name, out.module_path)


def _rocm_passthrough(
    original: Callable[..., Any], target: Target, cache_dir: Path, bound: inspect.BoundArguments
) -> Any:
    """ROCm: PyTorch's builder with hipcc is native there; pin the arch and key the build dir."""
    os.environ["PYTORCH_ROCM_ARCH"] = rocm.offload_arch(target.arch)
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 1))
    args = {k: v for k, v in bound.arguments.items() if k != "build_directory"}
    key = cache.content_key("rocm-load", target.arch, repr(sorted(args.items(), key=lambda kv: kv[0])))
    build_dir = cache_dir / "torch_extensions" / key
    build_dir.mkdir(parents=True, exist_ok=True)
    bound.arguments["build_directory"] = str(build_dir)
    return original(*bound.args, **bound.kwargs)


def inline_spec(target: Target, a: dict[str, Any]) -> BuildSpec:
    """The BuildSpec of a load_inline call, from its bound arguments (name -> value)."""
    functions = a.get("functions")
    if isinstance(functions, str):
        functions = [functions]
    if isinstance(functions, list | tuple):
        functions = {f: f for f in functions}
    return plan_inline(
        target,
        a["name"],
        _as_list(a.get("cpp_sources")),
        _as_list(a.get("cuda_sources")),
        functions,
        extra_cflags=_as_list(a.get("extra_cflags")),
        extra_cuda_cflags=_as_list(a.get("extra_cuda_cflags")),
        extra_ldflags=_as_list(a.get("extra_ldflags")),
        extra_include_paths=_as_list(a.get("extra_include_paths")),
        with_pytorch_error_handling=a.get("with_pytorch_error_handling", True),
        no_implicit_headers=a.get("no_implicit_headers", False),
    )


def load_spec(target: Target, a: dict[str, Any]) -> BuildSpec:
    """The BuildSpec of a load call, from its bound arguments."""
    return plan_load(
        target,
        a["name"],
        _as_list(a.get("sources")),
        extra_cflags=_as_list(a.get("extra_cflags")),
        extra_cuda_cflags=_as_list(a.get("extra_cuda_cflags")),
        extra_ldflags=_as_list(a.get("extra_ldflags")),
        extra_include_paths=_as_list(a.get("extra_include_paths")),
    )


def install_load_inline_shim(target: Target, cache_dir: Path, pch_cache: Path | None = None) -> None:
    """Patch torch.utils.cpp_extension.load_inline / load for the rest of this process.
    `pch_cache`: where the trusted parent keeps the precompiled torch header (engine.build_spec)."""
    from torch.utils import cpp_extension

    cache_dir = Path(cache_dir)
    original_inline = getattr(cpp_extension.load_inline, "__kjudge_original__", cpp_extension.load_inline)
    original_load = getattr(cpp_extension.load, "__kjudge_original__", cpp_extension.load)
    inline_sig = inspect.signature(original_inline)
    load_sig = inspect.signature(original_load)

    def load_inline(*args: Any, **kwargs: Any) -> Any:
        bound = inline_sig.bind(*args, **kwargs)
        if target.backend is Backend.ROCM:
            return _rocm_passthrough(original_inline, target, cache_dir, bound)
        a = bound.arguments
        return _load_built(
            inline_spec(target, a),
            cache_dir,
            pch_cache,
            a.get("is_python_module", True),
            a.get("verbose", False),
        )

    def load(*args: Any, **kwargs: Any) -> Any:
        bound = load_sig.bind(*args, **kwargs)
        if target.backend is Backend.ROCM:
            return _rocm_passthrough(original_load, target, cache_dir, bound)
        a = bound.arguments
        return _load_built(
            load_spec(target, a),
            cache_dir,
            pch_cache,
            a.get("is_python_module", True),
            a.get("verbose", False),
        )

    load_inline.__kjudge_original__ = original_inline  # type: ignore[attr-defined]
    load.__kjudge_original__ = original_load  # type: ignore[attr-defined]
    load_inline.__doc__ = original_inline.__doc__
    load.__doc__ = original_load.__doc__
    cpp_extension.load_inline = load_inline
    cpp_extension.load = load
