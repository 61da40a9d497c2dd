import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# KernelBench's HIP prompt format: HIP code in cpp_sources, built with hipcc. On an NVIDIA target
# kjudge's load_inline shim translates it to CUDA and builds it with nvcc for the device's arch.
os.environ["CXX"] = "hipcc"

relu_cpp_source = """
#include <hip/hip_runtime.h>

__global__ void relu_kernel(const float* x, float* out, int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {
        float v = x[idx];
        out[idx] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor relu_hip(torch::Tensor x) {
    auto size = x.numel();
    auto out = torch::empty_like(x);

    const int block_size = 256;
    const int num_blocks = (size + block_size - 1) / block_size;

    relu_kernel<<<num_blocks, block_size>>>(x.data_ptr<float>(), out.data_ptr<float>(), size);

    return out;
}
"""

relu = load_inline(
    name="relu_hip",
    cpp_sources=relu_cpp_source,
    functions=["relu_hip"],
    verbose=True,
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.relu = relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu.relu_hip(x.contiguous())
