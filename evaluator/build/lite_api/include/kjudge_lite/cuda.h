// The CUDA part of kjudge's lite torch API: the current stream, device guards, error checks.
#pragma once
#include <kjudge_lite/core.h>

#include <cuda_runtime.h>

namespace c10 {
namespace cuda {

class CUDAStream {
   public:
    explicit CUDAStream(cudaStream_t s) : s_(s) {}
    cudaStream_t stream() const { return s_; }
    operator cudaStream_t() const { return s_; }  // NOLINT: implicit, as c10's

   private:
    cudaStream_t s_;
};

inline CUDAStream getCurrentCUDAStream(int device_index = -1) {
    return CUDAStream(static_cast<cudaStream_t>(kjl_cuda_current_stream(static_cast<int16_t>(device_index))));
}

inline void check(cudaError_t err, const char* what) {
    if (err != cudaSuccess) throw ::c10::Error(::c10::str("CUDA error: ", cudaGetErrorString(err), " (", what, ")"));
}

// Sets the current device for a scope (a no-op for a CPU or unset device), as c10's guards do.
class OptionalCUDAGuard {
   public:
    OptionalCUDAGuard() = default;
    explicit OptionalCUDAGuard(std::optional<::c10::Device> d) {
        if (d.has_value()) set_device(*d);
    }
    explicit OptionalCUDAGuard(::c10::Device d) { set_device(d); }
    explicit OptionalCUDAGuard(int index) { set_index(index); }
    OptionalCUDAGuard(const OptionalCUDAGuard&) = delete;
    OptionalCUDAGuard& operator=(const OptionalCUDAGuard&) = delete;
    ~OptionalCUDAGuard() {
        if (original_ >= 0) cudaSetDevice(original_);
    }
    void set_device(::c10::Device d) {
        if (d.is_cuda() && d.has_index()) set_index(d.index());
    }
    void set_index(int index) {
        int current = 0;
        check(cudaGetDevice(&current), "cudaGetDevice");
        if (original_ < 0) original_ = current;
        if (current != index) check(cudaSetDevice(index), "cudaSetDevice");
    }

   private:
    int original_ = -1;
};
using CUDAGuard = OptionalCUDAGuard;

}  // namespace cuda
}  // namespace c10

namespace at {
namespace cuda {
using ::c10::cuda::CUDAGuard;
using ::c10::cuda::CUDAStream;
using ::c10::cuda::getCurrentCUDAStream;
using ::c10::cuda::OptionalCUDAGuard;
inline cudaDeviceProp* getCurrentDeviceProperties() {
    return const_cast<cudaDeviceProp*>(static_cast<const cudaDeviceProp*>(kjl_cuda_device_properties(-1)));
}
inline cudaDeviceProp* getDeviceProperties(int device_index) {
    return const_cast<cudaDeviceProp*>(
        static_cast<const cudaDeviceProp*>(kjl_cuda_device_properties(static_cast<int16_t>(device_index))));
}
}  // namespace cuda
}  // namespace at

#define C10_CUDA_CHECK(expr) ::c10::cuda::check((expr), #expr)
#define AT_CUDA_CHECK(expr) C10_CUDA_CHECK(expr)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
