// Incorrect on purpose: leaky ReLU (negative inputs scaled by 0.1 instead of zeroed).
// Expected verdict: incorrect.
#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < in.numel(); ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.1f * src[i];
    return out;
}
