# KernelBench format on the cpu target: C++ through load_inline (the build layer's shim).
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
torch::Tensor relu_cpu(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* s = in.data_ptr<float>();
    float* d = out.data_ptr<float>();
    for (int64_t i = 0; i < in.numel(); ++i) d[i] = s[i] > 0.0f ? s[i] : 0.0f;
    return out;
}
"""

# verbose: the build log goes to the run log, where the test looks for the precompiled header.
ext = load_inline(name="kb_relu_cpu", cpp_sources=source, functions=["relu_cpu"], verbose=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_cpu(x)
