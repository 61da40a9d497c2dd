"""Data passed across the native-build boundary (the parent, the sandboxed child, the cache)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from evaluator.build.toolchain import TorchInfo
from evaluator.result import Target


class BuildOutput(BaseModel):
    """What a native build produced (docs/internals.md, "Native builds")."""

    ok: bool
    module_path: Path | None = None
    module_name: str | None = None
    log: str = ""
    cached: bool = False
    seconds: float = 0.0
    message: str | None = Field(default=None, description="one line for the author when ok is False")
    refused: str | None = Field(
        default=None, description="set when no sandbox could be made: nothing was compiled"
    )
    transient: bool = Field(
        default=False,
        description="failed for the host's sake (a timeout, a killed compiler), not the source's",
    )
    steps_s: dict[str, float] = Field(
        default_factory=dict,
        description="wall seconds of this build's steps (lite_units, lite_link, units, link, child), "
        "so a slow compile stage says where its time went; a cached build keeps its first build's",
    )


class UnitKind(StrEnum):
    CXX = "cxx"  # host C++ through the host compiler (g++), precompiled torch header when possible
    CUDA = "cuda"  # CUDA C++ through nvcc
    HIP = "hip"  # HIP C++ through hipcc (ROCm)


class Unit(BaseModel):
    """One translation unit of an extension module."""

    name: str = Field(description="file name inside the build directory, e.g. kernel.cu")
    code: str
    kind: UnitKind
    # Device units only: compile against the light <torch/extension.h> (shadow/). Safe
    # only when the unit needs no pybind11; a failure retries with the real header.
    light_torch: bool = False
    # HIP sources translated for nvcc get the HIP-on-CUDA shim header force-included.
    hip_shim: bool = False
    # Add PyTorch's __CUDA_NO_HALF_OPERATORS__-style defines (what load_inline gives .cu files).
    torch_half_defines: bool = True
    # Compiled against kjudge's lite torch API (evaluator/build/lite.py) and linked with its
    # runtime; any failure sends the build down the regular path.
    lite: bool = False
    # Generated pybind11 glue (host only): built -O1, which GCC accepts with the -O2 precompiled
    # header. Its speed is never measured and -O2's inlining is a third of its compile time.
    glue: bool = False


class BuildSpec(BaseModel):
    """Everything that determines a build's output; its hash is the cache key."""

    module_name: str
    units: list[Unit]
    target: Target
    extra_cflags: list[str] = Field(default_factory=list)
    extra_cuda_cflags: list[str] = Field(default_factory=list)
    extra_ldflags: list[str] = Field(default_factory=list)
    extra_include_paths: list[str] = Field(default_factory=list)
    # When the light device unit fails, this alternative single-unit plan (real headers) is tried.
    fallback_units: list[Unit] | None = None
    # Tried before `units` when the lite runtime is there (evaluator/build/lite.py).
    lite_units: list[Unit] | None = None


class BuildJob(BaseModel):
    """The sandboxed child's job file (`python -m evaluator.build JOB.json`).

    The child only compiles into `work_dir` (inside its scratch); the trusted parent builds the
    shared precompiled header beforehand and publishes the module to the cache afterwards, so
    the sandbox never writes to the shared cache.
    """

    spec: BuildSpec
    work_dir: Path
    pch_dir: Path | None
    report_path: Path
    lite_dir: Path | None = None
    timeout_s: float = 300
    jobs: int | None = None
    torch: TorchInfo | None = None  # the parent's facts: the child need not import torch


class TrustedToolchain(BaseModel):
    """Where the trusted parent's precompiled header and lite runtimes are, as the parent found
    them: a sandboxed child given these uses them as they are instead of looking them up under
    keys of its own making (its compiler's path is part of those keys, and a child that resolves
    another compiler than the parent's would find neither)."""

    pch_dir: Path | None = None
    lite: dict[str, Path] = {}  # Backend value -> runtime directory
