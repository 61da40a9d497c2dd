"""Constants and skip markers shared by the native-build tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

SAMPLES = Path(__file__).parent / "samples"
REPO = Path(__file__).resolve().parents[2]

requires_cuda_gpu = pytest.mark.skipif(
    not (torch.cuda.is_available() and torch.version.cuda),
    reason="needs an NVIDIA GPU and a CUDA build of torch",
)
requires_nvcc = pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="needs nvcc"
)
