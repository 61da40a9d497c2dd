// 16-bit types as HIP kernels use them: __half/__half2 from hip_fp16.h with HIP's default
// arithmetic operators, __hip_bfloat16 intrinsics from hip_bf16.h, and the hip_bfloat16 class
// from hip_bfloat16.h (host and device), atomicAdd on floats, __syncthreads.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_bf16.h>
#include <hip/hip_bfloat16.h>

__global__ void scale_half2(__half2* x, __half s, int n2) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        __half2 v = x[i];
        x[i] = __hmul2(v, __half2half2(s));
        __half lo = __low2half(x[i]) + __float2half(0.5f);
        x[i] = __halves2half2(lo, __high2half(x[i]));
    }
}

__global__ void bf16_ops(const __hip_bfloat16* a, __hip_bfloat16* b, hip_bfloat16* c, float* total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float f = __bfloat162float(a[i]);
        b[i] = __float2bfloat16(f * 2.0f);
        hip_bfloat16 h(f);
        h += hip_bfloat16(1.0f);
        c[i] = -h;
        atomicAdd(total, static_cast<float>(c[i]));
    }
    __syncthreads();
}

float host_roundtrip(float f) {
    hip_bfloat16 h(f);
    return static_cast<float>(h * hip_bfloat16(3.0f));
}
