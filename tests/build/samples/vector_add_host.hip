// A complete HIP host program (no PyTorch): device memory, copies, a hipLaunchKernelGGL launch
// on a created stream, events for timing, error checks. Compiled (not run) in CI.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <vector>

#define HIP_CHECK(cmd)                                                              \
    do {                                                                            \
        hipError_t e = (cmd);                                                       \
        if (e != hipSuccess) {                                                      \
            std::fprintf(stderr, "%s failed: %s\n", #cmd, hipGetErrorString(e));    \
            return 1;                                                               \
        }                                                                           \
    } while (0)

__global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, size_t n) {
    size_t i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
    for (; i < n; i += static_cast<size_t>(hipBlockDim_x) * hipGridDim_x) c[i] = a[i] + b[i];
}

int main() {
    const size_t n = 1 << 20;
    std::vector<float> ha(n, 1.0f), hb(n, 2.0f), hc(n, 0.0f);
    float *da, *db, *dc;
    HIP_CHECK(hipMalloc(&da, n * sizeof(float)));
    HIP_CHECK(hipMalloc(&db, n * sizeof(float)));
    HIP_CHECK(hipMalloc(&dc, n * sizeof(float)));
    hipStream_t stream;
    HIP_CHECK(hipStreamCreate(&stream));
    HIP_CHECK(hipMemcpyAsync(da, ha.data(), n * sizeof(float), hipMemcpyHostToDevice, stream));
    HIP_CHECK(hipMemcpyAsync(db, hb.data(), n * sizeof(float), hipMemcpyHostToDevice, stream));
    HIP_CHECK(hipMemsetAsync(dc, 0, n * sizeof(float), stream));
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreateWithFlags(&stop, hipEventDefault));
    HIP_CHECK(hipEventRecord(start, stream));
    hipLaunchKernelGGL(vector_add, dim3(256), dim3(256), 0, stream, da, db, dc, n);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipEventRecord(stop, stream));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.0f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    HIP_CHECK(hipMemcpy(hc.data(), dc, n * sizeof(float), hipMemcpyDeviceToHost));
    HIP_CHECK(hipStreamSynchronize(stream));
    hipDeviceProp_t prop;
    HIP_CHECK(hipGetDeviceProperties(&prop, 0));
    std::printf("%s: %.3f ms, c[0] = %f, warpSize %d\n", prop.name, ms, hc[0], prop.warpSize);
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    HIP_CHECK(hipStreamDestroy(stream));
    HIP_CHECK(hipFree(da));
    HIP_CHECK(hipFree(db));
    HIP_CHECK(hipFree(dc));
    return hc[0] == 3.0f ? 0 : 1;
}
