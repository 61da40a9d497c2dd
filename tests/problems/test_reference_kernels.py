"""The reference kernels (problems/kernels): Triton ones under the interpreter on CPU, HIP and
CUDA ones compiled by nvcc for sm_90 (HIP through the HIP-on-CUDA translation), and all of them
judged `correct` by evaluate() on a GPU."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from problems.catalog import iter_builtin_problems

REPO = Path(__file__).resolve().parents[2]
KERNELS = [(p, lang, path) for p in iter_builtin_problems() for lang, path in sorted(p.kernels.items())]


def test_triton_kernels_match_their_problems_under_the_interpreter() -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.problems._triton_check"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    expected = {p.name for p, lang, _ in KERNELS if lang == "triton"}
    assert {r["problem"] for r in results} == expected
    failed = [r for r in results if not r["ok"]]
    assert not failed, failed


# A stand-in for PyTorch's CUDA context header, which needs CUDA libraries' headers (cuSPARSE,
# cuBLAS) that a compile-only machine may lack; everything else is the real toolchain.
_STREAM_STUB = """#include <cuda_runtime.h>
#include <torch/extension.h>
namespace at { namespace cuda { inline cudaStream_t getCurrentCUDAStream() { return 0; } } }
#define C10_CUDA_KERNEL_LAUNCH_CHECK() TORCH_CHECK(cudaGetLastError() == cudaSuccess)
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_native_kernels_compile_for_sm90(tmp_path: Path) -> None:
    """All HIP (translated) and CUDA kernels in one translation unit, each in its own namespace,
    so PyTorch's headers are parsed once."""
    import torch.utils.cpp_extension as cpp_extension

    from evaluator.build.engine import SHADOW_INCLUDE
    from evaluator.result import Backend, Target
    from evaluator.targets import cuda
    from evaluator.targets.hip_on_cuda import shim_flags, translate

    parts = []
    for problem, lang, path in KERNELS:
        if lang not in ("hip", "cuda"):
            continue
        source = path.read_text()
        if lang == "hip":
            source = translate(source.replace("#include <ATen/hip/HIPContext.h>", ""))
        else:
            source = source.replace("#include <ATen/cuda/CUDAContext.h>", "")
        parts.append(f'namespace k_{problem.name}_{lang} {{\n#line 1 "{path}"\n{source}\n}}\n')
    unit = tmp_path / "all.cu"
    unit.write_text(_STREAM_STUB + "\n".join(parts))
    # The light <torch/extension.h> first, as kjudge builds device units (evaluator/build/shadow).
    includes = [f"-I{SHADOW_INCLUDE}", *cuda.include_flags()] + [
        f"-I{p}" for p in cpp_extension.include_paths()
    ]
    includes.append(f"-I{sysconfig.get_paths()['include']}")
    cmd = cuda.nvcc_compile_command(
        source=unit,
        output=tmp_path / "all.o",
        target=Target(backend=Backend.CUDA, arch="sm_90", device="NVIDIA H100 80GB HBM3"),
        cxx_std="c++17",
        includes=includes,
        defines=[],
        extra=shim_flags(unit.read_text()),
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    errors = "\n".join(line for line in proc.stderr.splitlines() if "error" in line)
    assert proc.returncode == 0, errors[-4000:] or proc.stderr[-4000:]


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("problem", "lang", "path"), KERNELS, ids=[f"{p.name}-{lang}" for p, lang, _ in KERNELS]
)
def test_reference_kernel_is_correct_on_the_gpu(problem, lang: str, path: Path) -> None:
    from evaluator.api import evaluate
    from evaluator.options import EvalOptions, Submission
    from evaluator.problem import Problem
    from evaluator.result import Language

    result = evaluate(
        Problem.from_file(problem.path),
        Submission(source=path.read_text(), language=Language(lang), filename=path.name),
        EvalOptions(device="cuda", trials=3, measure_timing=False, baselines=False),
    )
    assert result.verdict == "correct", (
        result.message,
        result.flags,
        result.logs.compile[-2000:],
        result.logs.run[-2000:],
    )
