// HIP written against PyTorch's HIP names (as hipified PyTorch code and HIP prompts use them):
// ATen/hip/HIPContext.h, at::hip::getCurrentHIPStream(), c10::hip::HIPStreamGuard-free stream
// use, C10_HIP_KERNEL_LAUNCH_CHECK. Needs the CUDA build of PyTorch on NVIDIA (GPU tests only).
//
// forward(x) = x * scale + 1 for a float32 GPU tensor, computed on PyTorch's current stream.
#include <torch/extension.h>
#include <ATen/hip/HIPContext.h>
#include <c10/hip/HIPStream.h>
#include <hip/hip_runtime.h>

__global__ void axpb_kernel(const float* x, float* y, float scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * scale + 1.0f;
}

torch::Tensor forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const int n = static_cast<int>(x.numel());
    hipStream_t stream = at::hip::getCurrentHIPStream();
    hipStream_t same = c10::hip::getCurrentHIPStream().stream();
    TORCH_CHECK(stream == same, "at::hip and c10::hip disagree on the current stream");
    hipLaunchKernelGGL(axpb_kernel, dim3((n + 255) / 256), dim3(256), 0, stream,
                       x.data_ptr<float>(), y.data_ptr<float>(), 3.0f, n);
    C10_HIP_KERNEL_LAUNCH_CHECK();
    return y;
}
