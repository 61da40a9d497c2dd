"""HIP sources through the HIP-on-CUDA path, compiled for sm_90 by nvcc (no GPU needed).

Each sample is translated, then `nvcc -c` runs with the shim header force-included: syntax,
templates and device code generation all have to pass.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from evaluator.result import Target
from evaluator.targets import cuda
from evaluator.targets.hip_on_cuda import shim_flags, translate

from ._support import SAMPLES, requires_nvcc

pytestmark = requires_nvcc


def _nvcc(
    source: str, tmp_path: Path, target: Target, *, link: bool = False
) -> subprocess.CompletedProcess[str]:
    unit = tmp_path / "unit.cu"
    unit.write_text(source)
    cmd = cuda.nvcc_compile_command(
        source=unit,
        output=tmp_path / "unit.o",
        target=target,
        cxx_std="c++17",
        includes=cuda.include_flags(),
        defines=[],
        extra=shim_flags(source),
    )
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode == 0 and link:
        proc = subprocess.run(
            [
                cuda.nvcc_path(),
                str(tmp_path / "unit.o"),
                "-o",
                str(tmp_path / "a.out"),
                *cuda.gencode_flags(target),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    return proc


@pytest.mark.parametrize("sample", ["vector_add_host.hip", "warp_reduce.hip", "half_bf16.hip"])
def test_hip_sample_compiles_with_nvcc(sample: str, tmp_path: Path, sm90_target: Target) -> None:
    proc = _nvcc(
        translate((SAMPLES / sample).read_text()), tmp_path, sm90_target, link=sample == "vector_add_host.hip"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_only_sm90_machine_code_is_embedded(tmp_path: Path, sm90_target: Target) -> None:
    """No PTX fallback and no other architectures in the fat binary (nvcc's own plan, --dryrun)."""
    unit = tmp_path / "k.cu"
    unit.write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    cmd = cuda.nvcc_compile_command(
        source=unit,
        output=tmp_path / "k.o",
        target=sm90_target,
        cxx_std="c++17",
        includes=[],
        defines=[],
        extra=[],
    )
    plan = subprocess.run([*cmd, "--dryrun"], capture_output=True, text=True, timeout=60).stderr
    fatbinary = next(line for line in plan.splitlines() if "fatbinary" in line)
    images = re.findall(r"--image3=kind=(\w+),sm=(\d+)", fatbinary)
    assert images == [("elf", "90")]


def test_errors_point_at_the_authors_lines(tmp_path: Path, sm90_target: Target) -> None:
    src = '#line 1 "submission.hip"\n' + translate(
        "#include <hip/hip_runtime.h>\n__global__ void k(float* x) {\n  x[0] = undefined_thing;\n}\n"
    )
    proc = _nvcc(src, tmp_path, sm90_target)
    assert proc.returncode != 0
    assert "submission.hip(3)" in proc.stderr


def test_unknown_hip_header_fails_with_its_name(tmp_path: Path, sm90_target: Target) -> None:
    proc = _nvcc(translate("#include <hip/hip_ext.h>\n__global__ void k() {}\n"), tmp_path, sm90_target)
    assert proc.returncode != 0
    assert "hip/hip_ext.h" in proc.stderr and "no CUDA counterpart" in proc.stderr
