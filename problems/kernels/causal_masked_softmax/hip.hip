// Causally masked, scaled softmax (problems/level2/causal_masked_softmax.py) in HIP, fused:
// row r of the (batch, heads, seq, seq) scores is query i = r % seq; keys j > i get 0.
#include <hip/hip_runtime.h>
#include <ATen/hip/HIPContext.h>
#include <torch/extension.h>

// One block per row; each thread keeps kVPT values of the row in registers, so the row is read
// from memory once. Block sizes are multiples of 64 (a whole wavefront on AMD, two warps on
// NVIDIA) and the reductions use warpSize, never a hard-coded 32 or 64.
constexpr int kVPT = 16;
constexpr int kMaxThreads = 1024;

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor(v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor(v, o));
    return v;
}

// Every thread of the block must call these; all of them get the block-wide result.
__device__ float block_sum(float v, float* smem) {
    v = warp_sum(v);
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    __syncthreads();  // smem may still be read by the previous reduction
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(lane < nwarps ? smem[lane] : 0.0f);
        if (lane == 0) smem[0] = v;
    }
    __syncthreads();
    return smem[0];
}

__device__ float block_max(float v, float* smem) {
    v = warp_max(v);
    const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    const int nwarps = blockDim.x / warpSize;
    __syncthreads();
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_max(lane < nwarps ? smem[lane] : -INFINITY);
        if (lane == 0) smem[0] = v;
    }
    __syncthreads();
    return smem[0];
}

static int threads_for(int64_t cols) {
    int64_t t = (cols + kVPT - 1) / kVPT;
    t = (t + 63) / 64 * 64;
    return static_cast<int>(std::min<int64_t>(std::max<int64_t>(t, 64), kMaxThreads));
}

static void check_rows(const torch::Tensor& x, const char* name) {
    TORCH_CHECK(x.is_cuda(), name, ": expects a GPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, name, ": expects float32");
    TORCH_CHECK(x.size(-1) <= kVPT * kMaxThreads, name, ": rows longer than ", kVPT * kMaxThreads,
                " are not supported");
}

constexpr float kScale = 0.125f;  // the problem's `scale`

__global__ void __launch_bounds__(kMaxThreads) causal_softmax_rows(const float* __restrict__ x,
                                                                    float* __restrict__ y, int64_t seq) {
    __shared__ float smem[32];
    const int64_t r = blockIdx.x;
    const int64_t last = r % seq;  // keys 0..last are visible
    const float* row = x + r * seq;
    float* out = y + r * seq;
    float v[kVPT];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < kVPT; ++k) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
        v[k] = c <= last ? row[c] * kScale : -INFINITY;  // masked keys are never read
        m = fmaxf(m, v[k]);
    }
    m = block_max(m, smem);  // finite: key 0 is always visible
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < kVPT; ++k) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
        v[k] = c <= last ? expf(v[k] - m) : 0.0f;
        s += v[k];
    }
    const float inv = 1.0f / block_sum(s, smem);
#pragma unroll
    for (int k = 0; k < kVPT; ++k) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
        if (c < seq) out[c] = v[k] * inv;
    }
}

torch::Tensor forward(torch::Tensor scores) {
    check_rows(scores, "causal_masked_softmax");
    TORCH_CHECK(scores.dim() >= 2 && scores.size(-1) == scores.size(-2),
                "causal_masked_softmax: expects (..., seq, seq) scores");
    auto in = scores.contiguous();
    auto out = torch::empty_like(in);
    const int64_t seq = in.size(-1);
    const int64_t rows = seq == 0 ? 0 : in.numel() / seq;
    if (rows == 0) return out;
    hipLaunchKernelGGL(causal_softmax_rows, dim3(rows), dim3(threads_for(seq)), 0, at::hip::getCurrentHIPStream(),
                       in.data_ptr<float>(), out.data_ptr<float>(), seq);
    C10_HIP_KERNEL_LAUNCH_CHECK();
    return out;
}
