// ReLU for the cpu target: a raw-source `cpp` submission. kjudge calls forward(x).
//
// Two things make it as fast as eager PyTorch (16 x 16384 fp32; numbers in examples/relu/README.md):
// - a branch-free body in fixed-width blocks, which GCC -O2 vectorizes into SIMD compare+and
//   (a plain `x > 0 ? x : 0` loop compiles to a branch that mispredicts on random signs);
// - at::parallel_for over all cores, as PyTorch's own kernels do (kjudge builds with OpenMP).
#include <torch/extension.h>

namespace {

constexpr int64_t kBlock = 32;          // floats per vectorized block
constexpr int64_t kGrain = 1 << 15;     // elements per thread at least: below this, one thread

#if defined(__x86_64__) && defined(__GNUC__)
// One copy per instruction set, chosen at load time for the CPU at hand.
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void relu_span(const float* __restrict__ src, float* __restrict__ dst, int64_t n) {
    int64_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
        for (int64_t j = 0; j < kBlock; ++j) {
            const float v = src[i + j];
            dst[i + j] = v > 0.0f ? v : 0.0f;
        }
    }
    for (; i < n; ++i) dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
}

}  // namespace

torch::Tensor forward(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu(), "relu_cpp expects a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_cpp expects float32");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    at::parallel_for(0, in.numel(), kGrain, [&](int64_t begin, int64_t end) {
        relu_span(src + begin, dst + begin, end - begin);
    });
    return out;
}
