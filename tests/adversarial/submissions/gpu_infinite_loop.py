# Device-side attack (GPU): a kernel that never terminates. Expected: the wall clock kills the
# sandbox (the CUDA context dies with the process), verdict `timeout`; the next submission on
# the same GPU is `correct`.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
__global__ void spin(volatile int* flag) { while (*flag == 0) { } }
torch::Tensor forward_spin(torch::Tensor x) {
    auto flag = torch::zeros({1}, x.options().dtype(torch::kInt32));
    spin<<<1, 1>>>(flag.data_ptr<int>());
    return x.clamp_min(0);
}
"""
mod = load_inline(name="gpu_spin", cpp_sources="torch::Tensor forward_spin(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["forward_spin"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        y = mod.forward_spin(x)
        torch.cuda.synchronize()
        return y
