// ReLU in HIP (language `hip`): native on ROCm, through HIP-on-CUDA on NVIDIA GPUs.
#include <hip/hip_runtime.h>
#include <torch/extension.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) y[i] = fmaxf(x[i], 0.0f);
}

torch::Tensor forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "relu_hip expects a GPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_hip expects float32");
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    int64_t n = in.numel();
    int threads = 256;
    int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 65535LL * 8);
    hipLaunchKernelGGL(relu_kernel, dim3(blocks), dim3(threads), 0, 0,
                       in.data_ptr<float>(), out.data_ptr<float>(), n);
    TORCH_CHECK(hipGetLastError() == hipSuccess, "relu_kernel launch failed");
    return out;
}
