"""The compile stage's part for Triton candidates: their kernels compiled ahead, off the GPU.

`prebuild_triton` runs evaluator/build/triton_ahead.py in a sandboxed child on an NVIDIA target
and reports what it compiled; it never decides a verdict. Whether this host's Triton can be
driven that way at all (its JIT internals change between releases) is checked once per Triton
version and target, on a built-in kernel, and remembered in the cache: where the check fails,
Triton candidates go to their run as before instead of paying a child that compiles nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from evaluator.build.engine import timed_step
from evaluator.build.triton_ahead import TritonAheadJob, TritonAheadReport, capability
from evaluator.options import EvalOptions, Submission
from evaluator.problem import Problem
from evaluator.result import Backend, Language, Target

if TYPE_CHECKING:
    from evaluator.api import BuildOutcome

CHECK_PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.randn(4, 64)]


def get_init_inputs():
    return []
"""
CHECK_KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kjudge_ahead_check(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        kjudge_ahead_check[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return y
"""


def prebuild_triton(
    problem: Problem,
    submission: Submission,
    options: EvalOptions,
    cache_dir: Path,
    target: Target,
    started: float,
) -> BuildOutcome | None:
    """The candidate's kernels compiled into the Triton cache its run reads, or None where that
    is not done (not NVIDIA, switched off, or this host's Triton failed the check)."""
    from evaluator.api import BuildOutcome

    arch = _ahead_capability(target, cache_dir, options)
    if arch is None:
        return None
    durations: dict[str, float] = {}
    with timed_step(durations, "compile_child"):
        report = _compile_ahead(problem, submission, options, cache_dir, target, arch)
    log = f"compiled {report.launches} Triton launch(es) ahead for sm_{arch}\n"
    if report.error:
        log += f"the rest is left to the run's JIT: {report.error}\n"
    return BuildOutcome(
        target=target,
        log=log,
        durations_s={"compile": round(time.monotonic() - started, 4)} | durations,
    )


def _ahead_capability(target: Target, cache_dir: Path, options: EvalOptions) -> int | None:
    """The compute capability to compile for (90 for sm_90), or None: NVIDIA targets whose
    check passed; KJUDGE_NO_TRITON_AHEAD=1 turns it off."""
    if target.backend is not Backend.CUDA or os.environ.get("KJUDGE_NO_TRITON_AHEAD") == "1":
        return None
    arch = capability(target.arch)
    if arch is None or not _works_here(arch, target, cache_dir.resolve(), options):
        return None
    return arch


_CHECKED: dict[tuple[int, Path], bool] = {}


def _works_here(arch: int, target: Target, cache_dir: Path, options: EvalOptions) -> bool:
    if (arch, cache_dir) not in _CHECKED:
        _CHECKED[arch, cache_dir] = _check(arch, target, cache_dir, options)
    return _CHECKED[arch, cache_dir]


def _check(arch: int, target: Target, cache_dir: Path, options: EvalOptions) -> bool:
    """Whether the built-in kernel compiles ahead with this host's Triton: read from the cache
    when another process already checked, else checked now (seconds, once) and written there."""
    try:
        version = metadata.version("triton")
    except metadata.PackageNotFoundError:
        return False
    source = (Path(__file__).parent / "build" / "triton_ahead.py").read_bytes()
    fingerprint = hashlib.sha256(source).hexdigest()[:16]
    marker = cache_dir / "triton" / f"kjudge-ahead-check-{version}-sm_{arch}-{fingerprint}.json"
    try:
        return bool(json.loads(marker.read_text())["works"])
    except (OSError, ValueError, KeyError):
        pass
    problem = Problem.from_source(CHECK_PROBLEM, name="kjudge_ahead_check")
    report = _compile_ahead(
        problem, Submission(source=CHECK_KERNEL, language=Language.TRITON), options, cache_dir, target, arch
    )
    works = report.launches > 0 and report.error is None
    marker.parent.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_name(f".{marker.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"works": works, "error": report.error}))
    os.replace(tmp, marker)
    return works


def _compile_ahead(
    problem: Problem, submission: Submission, options: EvalOptions, cache_dir: Path, target: Target, arch: int
) -> TritonAheadReport:
    from evaluator.api import host_child

    (cache_dir / "triton").mkdir(parents=True, exist_ok=True)

    def job(candidate: Path, report: Path) -> TritonAheadJob:
        problem_path = candidate.with_name("kjudge_problem.py")
        problem_path.write_text(problem.source)
        return TritonAheadJob(
            candidate_path=candidate,
            problem_path=problem_path,
            dtype=problem.settings.dtype,
            capability=arch,
            report_path=report,
        )

    raw, why_not = host_child(
        "evaluator.build.triton_ahead", job, submission, options, cache_dir, target, "triton"
    )
    return TritonAheadReport(error=why_not) if raw is None else TritonAheadReport.model_validate(raw)
