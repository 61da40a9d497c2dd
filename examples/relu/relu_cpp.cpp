// ReLU for the cpu target: a raw-source `cpp` submission. kjudge calls forward(x).
#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu(), "relu_cpp expects a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_cpp expects float32");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, in.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
    });
    return out;
}
