// Row softmax (problems/level1/softmax.py) in CUDA: one block per row, one read and one write.
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

// One block per row; each thread keeps kVPT values of the row in registers, so the row is read
// from memory once. Block sizes are multiples of 64 threads (two warps).
constexpr int kVPT = 16;
constexpr int kMaxThreads = 1024;

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
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

__global__ void __launch_bounds__(kMaxThreads) softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                                             int64_t cols) {
    __shared__ float smem[32];
    const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
    float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
    float v[kVPT];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < kVPT; ++k) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
        v[k] = c < cols ? row[c] : -INFINITY;
        m = fmaxf(m, v[k]);
    }
    m = block_max(m, smem);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < kVPT; ++k) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
        v[k] = c < cols ? expf(v[k] - m) : 0.0f;
        s += v[k];
    }
    const float inv = 1.0f / block_sum(s, smem);
#pragma unroll
    for (int k = 0; k < kVPT; ++k) {
        const int64_t c = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
        if (c < cols) out[c] = v[k] * inv;
    }
}

torch::Tensor forward(torch::Tensor x) {
    check_rows(x, "softmax");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const int64_t cols = in.size(-1);
    const int64_t rows = cols == 0 ? 0 : in.numel() / cols;
    if (rows == 0) return out;
    softmax_rows<<<dim3(rows), dim3(threads_for(cols)), 0, at::cuda::getCurrentCUDAStream()>>>(in.data_ptr<float>(), out.data_ptr<float>(), cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
