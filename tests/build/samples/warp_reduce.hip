// Warp-level HIP as generated reductions use it: mask-less __shfl_xor/__shfl/__ballot/__any,
// warpSize-derived strides, __lane_id, dynamic shared memory via HIP_DYNAMIC_SHARED, atomics,
// a template kernel launched through hipLaunchKernelGGL + HIP_KERNEL_NAME, __launch_bounds__.
#include <hip/hip_runtime.h>

template <typename T>
__device__ inline T warp_sum(T v) {
    for (int offset = warpSize / 2; offset > 0; offset >>= 1) v += __shfl_xor(v, offset);
    return v;
}

template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) row_sum(const T* __restrict__ x, T* __restrict__ out,
                                                 unsigned long long* nonzero_rows, int cols) {
    HIP_DYNAMIC_SHARED(float, smem)
    const T* row = x + static_cast<size_t>(blockIdx.x) * cols;
    T acc = 0;
    for (int c = threadIdx.x; c < cols; c += BLOCK) acc += row[c];
    acc = warp_sum(acc);
    const int lane = __lane_id();
    const int warp = threadIdx.x / warpSize;
    if (lane == 0) smem[warp] = static_cast<float>(acc);
    __syncthreads();
    if (warp == 0) {
        float v = lane < BLOCK / warpSize ? smem[lane] : 0.0f;
        v = warp_sum(v);
        v = __shfl(v, 0);
        auto any_positive = __ballot(v > 0.0f);
        if (lane == 0) {
            out[blockIdx.x] = static_cast<T>(v);
            if (__any(any_positive != 0)) atomicAdd(nonzero_rows, 1ull);
        }
    }
}

void launch_row_sum(const float* x, float* out, unsigned long long* count, int rows, int cols,
                    hipStream_t stream) {
    constexpr int kBlock = 256;
    hipLaunchKernelGGL(HIP_KERNEL_NAME(row_sum<float, kBlock>), dim3(rows), dim3(kBlock),
                       (kBlock / 32) * sizeof(float), stream, x, out, count, cols);
    row_sum<float, kBlock><<<rows, kBlock, (kBlock / 32) * sizeof(float), stream>>>(x, out, count, cols);
}
