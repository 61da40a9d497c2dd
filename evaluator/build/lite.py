"""The lite build: a candidate's unit compiled against kjudge's small torch API, not all of ATen.

A kernel's own host code uses a sliver of PyTorch (Tensor metadata, factories, views,
TORCH_CHECK, AT_DISPATCH, the current stream). `lite_api/include` declares just that; every call
goes through `lite_api/runtime.cpp`, which runs the real PyTorch operation and binds the entries
to Python. The runtime is compiled once per (toolchain, torch, backend), trusted, with the
precompiled torch header, into a shared library that each lite module links; so a candidate's
compile is nvcc (or g++) on its own code plus a few hundred lines, instead of parsing ATen and
pybind11 three times, and its link reads one small library instead of torch's.
Measured on the 2-core host: a ReLU unit 2.4 s of compiler CPU against ~25 s with the light
header (docs/internals.md, "Native builds").

A unit the lite API cannot compile (an ATen op, pybind11, a header it does not shadow) is built
again the regular way (engine.py): the lite attempt can only save time, never change a verdict.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import uuid
from functools import lru_cache
from pathlib import Path

from evaluator.build import commands
from evaluator.build.cache import content_key, file_lock
from evaluator.build.models import Unit, UnitKind
from evaluator.build.pch import ensure_pch
from evaluator.build.toolchain import compiler_version, host_compiler, torch_info
from evaluator.result import Backend
from evaluator.targets import cuda
from evaluator.targets.hip_on_cuda import mask_comments_and_strings

LITE_DIR = Path(__file__).parent / "lite_api"
INCLUDE_DIR = LITE_DIR / "include"
RUNTIME_SOURCE = LITE_DIR / "runtime.cpp"
RUNTIME_OBJECT = "runtime.o"
# The runtime's shared library in its directory: named by the directory's key, so that two
# runtimes (two toolchains, a kjudge upgrade) never share a soname in one process.
RUNTIME_LIBRARY_PREFIX = "libkjudge_lite_"
# The docstring a lite module gives each entry (runtime.cpp); the count is the C++ arity.
ARITY_DOC = re.compile(r"kjudge lite entry taking (\d+) arguments")

# The element types the lite API names only with c10's Half/BFloat16 headers (a second or so of
# compile time, so only for units that mention them).
_NEEDS_HALF = re.compile(
    r"\b(Half|BFloat16|kHalf|kBFloat16|kFloat16|__half|__nv_bfloat16|half2?)\b|AND_HALF|_AND2?\s*\("
)
# Python bindings, or host code the lite API does not have: straight to the regular build.
_NOT_LITE = re.compile(
    r"\bPYBIND11_\w+|\bpybind11\b|\bpy::|\btorch::(nn|optim|data|jit|autograd|python|serialize)\b|"
    r"\bat::(indexing|native)\b"
)


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """What the lite API is made of: part of every lite module's cache key."""
    digest = hashlib.sha256()
    for path in sorted(LITE_DIR.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(LITE_DIR)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


# The C++ standard of a lite CUDA unit. nvcc parses a unit three times (cudafe++, cicc, the host
# compiler), and libstdc++'s <string> under C++20 costs each pass: the relu unit took 5.0 s at
# c++20 and 3.8 s at c++17 (2-core host, 3 runs each). A source that needs C++20 fails its lite
# attempt and is built the regular way, with PyTorch's own -std, as anything the lite API lacks.
CUDA_CXX_STD = "c++17"


def cuda_enabled() -> bool:
    """CUDA units go lite unless KJUDGE_LITE_CUDA=0 (tests/build/test_lite_gpu.py runs them on
    the GPU), where torch was built with CUDA: a CPU-only torch cannot link the CUDA runtime,
    and trying it before every CUDA compile would only cost time. C++ units are lite everywhere
    (the CPU tests run them in CI)."""
    setting = os.environ.get("KJUDGE_LITE_CUDA", "")
    if setting == "0":
        return False
    return setting == "1" or _torch_built_with_cuda()


_given_cuda: bool | None = None


def use_torch_cuda(built_with_cuda: bool) -> None:
    """Take the fact from the trusted parent (a child that must not import torch)."""
    global _given_cuda
    _given_cuda = built_with_cuda


def _torch_built_with_cuda() -> bool:
    return _given_cuda if _given_cuda is not None else _read_torch_built_with_cuda()


@lru_cache(maxsize=1)
def _read_torch_built_with_cuda() -> bool:
    import torch

    return torch.version.cuda is not None


def eligible(code: str, kind: UnitKind, backend: Backend) -> bool:
    """Whether a unit is worth a lite attempt: C++ anywhere, CUDA on NVIDIA when enabled (ROCm:
    not yet). KJUDGE_NO_LITE=1 turns lite builds off (an operator's switch, and the benches'
    baseline)."""
    if os.environ.get("KJUDGE_NO_LITE") == "1":
        return False
    if kind is UnitKind.HIP or (
        kind is UnitKind.CUDA and (backend is not Backend.CUDA or not cuda_enabled())
    ):
        return False
    return _NOT_LITE.search(mask_comments_and_strings(code)) is None


def module_init(module_name: str, entries: list[str]) -> str:
    """The code appended to a lite unit: its PyInit, binding each entry through a trampoline."""
    rows = ", ".join(
        f'{{"{name}", KJUDGE_LITE_TRAMPOLINE({name}), ::kjudge_lite::arity(&{name})}}' for name in entries
    )
    return (
        f'\nextern "C" __attribute__((visibility("default"))) void* PyInit_{module_name}() {{\n'
        f"    static const KjlEntry entries[] = {{{rows}}};\n"
        f'    return kjl_make_module("{module_name}", entries, {len(entries)});\n'
        "}\n"
    )


def lite_unit(
    name: str, code: str, kind: UnitKind, module_name: str, entries: list[str], **fields: bool
) -> Unit:
    # The lite header first, whatever the source includes first (<cuda_runtime.h>, <vector>...);
    # `#line 1`: a lite build's errors give the submission's own line numbers.
    body = "#include <torch/extension.h>\n#line 1\n" + code + module_init(module_name, entries)
    return Unit(name=name, code=body, kind=kind, lite=True, **fields)


def unit_flags(unit: Unit) -> tuple[list[str], list[str]]:
    """(include flags, defines) of a lite unit; torch's own headers only for Half/BFloat16."""
    includes = [f"-I{INCLUDE_DIR}"]
    defines = ["-fvisibility=hidden"] if unit.kind is UnitKind.CXX else ["-Xcompiler", "-fvisibility=hidden"]
    if _NEEDS_HALF.search(unit.code):
        includes += ["-isystem", torch_info().include_dirs[0]]
        defines.append("-DKJUDGE_LITE_HALF")
    return includes, defines


def cxx_command(unit: Unit, source: Path, output: Path, extra: list[str]) -> list[str]:
    """g++ for a lite C++ unit: the flags of a regular host unit, minus torch and pybind11."""
    info = torch_info()
    includes, defines = unit_flags(unit)
    flags = [f for f in commands.pch_flags(info) if f not in info.pybind11_flags]
    return [host_compiler(), "-c", str(source), "-o", str(output), *flags, *defines, *includes, *extra]


def runtime_dir(cache_dir: Path, backend: Backend) -> Path:
    info = torch_info()
    compiler = host_compiler()
    key = content_key(
        "lite-runtime",
        fingerprint(),
        backend.value,
        compiler,
        compiler_version(compiler),
        info.model_dump(),
        commands.pch_flags(info),
    )
    return cache_dir / "lite" / key


def runtime_library(directory: Path) -> str:
    return f"{RUNTIME_LIBRARY_PREFIX}{directory.name[:16]}.so"


def find_runtime(cache_dir: Path, backend: Backend) -> Path | None:
    directory = runtime_dir(cache_dir, backend)
    return directory if (directory / runtime_library(directory)).exists() else None


def link_command(objects: list[Path], output: Path, runtime: Path, backend: Backend) -> list[str]:
    """A lite module's link: its units and the runtime library, found again at load through the
    module's RUNPATH (the runtime's directory, bound read-only into every run sandbox)."""
    flags = [
        host_compiler(),
        "-shared",
        *map(str, objects),
        "-o",
        str(output),
        f"-L{runtime}",
        f"-l:{runtime_library(runtime)}",
        f"-Wl,-rpath,{runtime}",
        "-fopenmp",  # the units' OpenMP regions (commands.pch_flags)
    ]
    return flags + (cuda.cudart_link_flags() if backend is Backend.CUDA else [])


def _runtime_link_command(backend: Backend, obj: Path, output: Path, soname: str) -> list[str]:
    info = torch_info()
    backend_flags: list[str] = []
    if backend is Backend.CUDA:
        existing = {p.name[3:-3] for p in Path(info.library_dir).glob("lib*.so")}
        backend_flags = cuda.link_flags(info.library_dir, existing)
    return commands.link_command(
        host_compiler(), info, objects=[obj], output=output, backend_flags=backend_flags,
        extra=[f"-Wl,-soname,{soname}"],
    )  # fmt: skip


def _runtime_command(backend: Backend, pch_dir: Path | None, output: Path) -> list[str]:
    cmd = commands.cxx_compile_command(
        host_compiler(),
        torch_info(),
        source=RUNTIME_SOURCE,
        output=output,
        module_name="kjudge_lite_runtime",
        pch_dir=pch_dir,
        includes=[],
        extra=[],
    )
    if backend is Backend.CUDA:
        cmd += ["-DKJUDGE_LITE_CUDA", *cuda.include_flags()]
    return cmd


def ensure_runtime(cache_dir: Path, backend: Backend, timeout_s: float = 600) -> tuple[Path | None, str]:
    """Build the lite runtime for `backend` if missing (trusted: kjudge's own source). Returns
    (its directory or None, log). None where it cannot be built: lite builds are then skipped."""
    if backend is Backend.ROCM:
        return None, ""
    directory = runtime_dir(cache_dir, backend)
    library = directory / runtime_library(directory)
    if library.exists():
        return directory, ""
    pch_dir, log = ensure_pch(cache_dir, host_compiler(), timeout_s=timeout_s)
    with file_lock(cache_dir / "lite" / "build.lock"):
        if library.exists():
            return directory, log
        directory.mkdir(parents=True, exist_ok=True)
        suffix = f"{os.getpid()}.{uuid.uuid4().hex[:8]}"
        obj, tmp = directory / f".{RUNTIME_OBJECT}.{suffix}", directory / f".{library.name}.{suffix}"
        steps = [
            _runtime_command(backend, pch_dir, obj),
            _runtime_link_command(backend, obj, tmp, library.name),
        ]
        failure = None
        try:
            for cmd in steps:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
                if proc.returncode != 0:
                    failure = f"lite runtime failed; builds take the regular path:\n{proc.stderr[-3000:]}\n"
                    break
        except (OSError, subprocess.TimeoutExpired) as exc:
            failure = f"lite runtime not built ({exc}); builds take the regular path\n"
        obj.unlink(missing_ok=True)
        if failure is not None:
            tmp.unlink(missing_ok=True)
            return None, log + failure
        os.rename(tmp, library)
    return directory, log + f"built the lite runtime for {backend.value}\n"
