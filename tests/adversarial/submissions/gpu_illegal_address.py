# Device-side attack (GPU): an illegal memory access (write through a wild pointer).
# Expected: CUDA error 700 in the child, verdict `runtime_error`; the GPU and the worker are fine
# for the next submission (the faulting context is destroyed with the child process).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
__global__ void wild(float* p) { p[(size_t)1 << 40] = 1.f; }
torch::Tensor forward_wild(torch::Tensor x) {
    auto y = torch::empty_like(x);
    wild<<<1, 1>>>(y.data_ptr<float>());
    return y;
}
"""
mod = load_inline(name="gpu_wild", cpp_sources="torch::Tensor forward_wild(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["forward_wild"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        y = mod.forward_wild(x)
        torch.cuda.synchronize()
        return y
