// The boundary between a lite unit (the candidate's code, compiled against kjudge's small torch
// API) and the lite runtime (evaluator/build/lite_api/runtime.cpp, built once per toolchain
// against the real PyTorch headers as a shared library that every lite module links).
//
// Plain C types only: the two sides are compiled by different compilers (nvcc / g++) with
// different headers, so nothing of the standard library crosses. A tensor crosses as its
// c10::TensorImpl pointer; a function that returns one hands over one reference.
#pragma once
#include <cstddef>
#include <cstdint>

// Exported by the runtime library and resolved when a lite module loads. Each module finds the
// runtime it was linked with: its RUNPATH names that runtime's directory, and modules load with
// RTLD_LOCAL, so two runtimes in one process never answer for each other.
#define KJL_API __attribute__((visibility("default")))

extern "C" {

struct KjlOptions {
    int8_t dtype;          // c10::ScalarType value, -1: unset (the default dtype)
    int8_t device_type;    // c10::DeviceType value, -1: unset (CPU)
    int16_t device_index;  // -1: unset (the current device)
    int8_t requires_grad;  // 0 / 1
};

enum KjlTag : int32_t { KJL_NONE = 0, KJL_TENSOR = 1, KJL_INT = 2, KJL_DOUBLE = 3, KJL_BOOL = 4, KJL_LIST = 5, KJL_TUPLE = 6 };

// An argument to, or the result of, an entry function. A list's items are owned by whoever
// made the list (the runtime for arguments; for a result, the runtime frees them with
// kjl_free_values, which lives in the same module).
struct KjlValue {
    int32_t tag;
    int64_t len;  // items, for KJL_LIST / KJL_TUPLE
    union {
        void* tensor;  // c10::TensorImpl*, nullptr for an undefined tensor
        int64_t i;
        double d;
        KjlValue* items;
    };
};

// An entry's trampoline: 0 = ok (`result` set), 1 = an error from the code (RuntimeError),
// 2 = the arguments do not fit the signature (TypeError); the message goes to `error`.
typedef int (*KjlTrampoline)(const KjlValue* args, int64_t nargs, KjlValue* result, char* error, size_t error_len);

struct KjlEntry {
    const char* name;
    KjlTrampoline call;
    int64_t arity;  // the C++ function's parameter count (the runner explains a mismatch with it)
};

// Tensor metadata and references.
KJL_API void kjl_retain(void* t);
KJL_API void kjl_release(void* t);
KJL_API int64_t kjl_numel(void* t);
KJL_API int64_t kjl_dim(void* t);
KJL_API const int64_t* kjl_sizes(void* t);
KJL_API const int64_t* kjl_strides(void* t);
KJL_API int64_t kjl_storage_offset(void* t);
KJL_API int8_t kjl_dtype(void* t);
KJL_API int8_t kjl_device_type(void* t);
KJL_API int16_t kjl_device_index(void* t);
KJL_API int kjl_is_contiguous(void* t);
KJL_API int kjl_requires_grad(void* t);
KJL_API void* kjl_data_ptr(void* t);
KJL_API int64_t kjl_element_size(int8_t dtype);
KJL_API const char* kjl_dtype_name(int8_t dtype);
KJL_API double kjl_item_double(void* t);
KJL_API int64_t kjl_item_int(void* t);
KJL_API int kjl_num_threads();  // at::get_num_threads(): PyTorch's intra-op thread count

// Operations that make a tensor (a new reference). `ints` are the op's integer arguments.
enum KjlOp : int32_t {
    KJL_CONTIGUOUS, KJL_CLONE, KJL_VIEW, KJL_RESHAPE, KJL_PERMUTE, KJL_TRANSPOSE, KJL_T,
    KJL_FLATTEN, KJL_UNSQUEEZE, KJL_SQUEEZE, KJL_SQUEEZE_DIM, KJL_NARROW, KJL_SELECT, KJL_SLICE,
    KJL_EXPAND, KJL_ZERO_, KJL_FILL_, KJL_TO_DTYPE, KJL_TO_DEVICE, KJL_DETACH, KJL_COPY_,
    KJL_VIEW_AS, KJL_EXPAND_AS, KJL_RESHAPE_AS
};
KJL_API void* kjl_op(int32_t op, void* self, const int64_t* ints, int64_t nints, double value, void* other);

enum KjlFactory : int32_t {
    KJL_EMPTY, KJL_ZEROS, KJL_ONES, KJL_FULL, KJL_EMPTY_LIKE, KJL_ZEROS_LIKE, KJL_ONES_LIKE,
    KJL_FULL_LIKE, KJL_EMPTY_STRIDED, KJL_ARANGE
};
// `options` fields left unset take the defaults (factories) or `like`'s (the *_LIKE ones).
KJL_API void* kjl_factory(int32_t kind, const int64_t* sizes, int64_t ndim, const int64_t* strides,
                             KjlOptions options, double value, void* like);

// CUDA: the current stream of a device (-1: the current device), and its properties.
KJL_API void* kjl_cuda_current_stream(int16_t device_index);
KJL_API const void* kjl_cuda_device_properties(int16_t device_index);

// What a lite module's PyInit calls (runtime.cpp): a Python module binding the entries.
KJL_API void* kjl_make_module(const char* name, const KjlEntry* entries, int64_t count);
KJL_API void kjl_free_values(KjlValue* values, int64_t count);
}
