// SwiGLU gate, silu(x[:, :H]) * x[:, H:] (problems/level2/swiglu.py) in CUDA: one pass, no temporaries.
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

__device__ __forceinline__ float silu_mul(float a, float b) { return a / (1.0f + expf(-a)) * b; }

// x is (rows, 2 * half) contiguous, y is (rows, half). vec: half % 4 == 0 and aligned pointers.
__global__ void swiglu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, int64_t half,
                              bool vec) {
    const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    if (vec) {
        for (int64_t i = tid; i < n / 4; i += stride) {
            const int64_t row = (i * 4) / half, col = (i * 4) % half;
            const float* src = x + row * 2 * half + col;
            const float4 a = *reinterpret_cast<const float4*>(src);
            const float4 b = *reinterpret_cast<const float4*>(src + half);
            float4 o;
            o.x = silu_mul(a.x, b.x);
            o.y = silu_mul(a.y, b.y);
            o.z = silu_mul(a.z, b.z);
            o.w = silu_mul(a.w, b.w);
            reinterpret_cast<float4*>(y)[i] = o;
        }
    } else {
        for (int64_t i = tid; i < n; i += stride) {
            const int64_t row = i / half, col = i % half;
            y[i] = silu_mul(x[row * 2 * half + col], x[row * 2 * half + half + col]);
        }
    }
}

torch::Tensor forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "swiglu: expects a float32 GPU tensor");
    TORCH_CHECK(x.dim() >= 1 && x.size(-1) % 2 == 0, "swiglu: the last dimension must be even");
    auto in = x.contiguous();
    const int64_t half = in.size(-1) / 2;
    auto sizes = in.sizes().vec();
    sizes.back() = half;
    auto out = torch::empty(sizes, in.options());
    const int64_t n = out.numel();
    if (n == 0) return out;
    const bool vec = half % 4 == 0 && reinterpret_cast<uintptr_t>(in.data_ptr<float>()) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(out.data_ptr<float>()) % 16 == 0;
    const int threads = 256;
    const int64_t work = vec ? n / 4 : n;
    const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>((work + threads - 1) / threads, 4096));
    swiglu_kernel<<<dim3(blocks), dim3(threads), 0, at::cuda::getCurrentCUDAStream()>>>(in.data_ptr<float>(), out.data_ptr<float>(), n, half, vec);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
