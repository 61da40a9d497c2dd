// ReLU for the cpu target (examples/relu/relu_cpp.cpp), slow to compile.
#include <torch/extension.h>

// Slow to compile on purpose (~1 s of g++ constexpr evaluation per line): the service tests
// kill the worker while this is compiling, 2 s after it starts; five lines leave seconds of
// margin on a quiet host, and each line more is a second more of both compiles.
constexpr unsigned long long burn(unsigned long long n, unsigned long long s) {
    unsigned long long x = s;
    for (unsigned long long i = 0; i < n; ++i) x = x * 6364136223846793005ULL + i;
    return x;
}
static_assert(burn(250000ULL, 1ULL) != 7);
static_assert(burn(250000ULL, 2ULL) != 7);
static_assert(burn(250000ULL, 3ULL) != 7);
static_assert(burn(250000ULL, 4ULL) != 7);
static_assert(burn(250000ULL, 5ULL) != 7);

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
