// kjudge's lite torch API: what a kernel's host code uses of <torch/extension.h> (Tensor and
// its metadata, factories, views, TORCH_CHECK, AT_DISPATCH), in a few hundred lines instead of
// all of ATen. Every operation calls the lite runtime (abi.h), which runs the real PyTorch one,
// so behaviour is PyTorch's; only parsing is saved. A unit that needs anything not here fails to
// compile and is built again with the real headers (evaluator/build/lite.py says when).
#pragma once
#include <kjudge_lite/abi.h>

// No <algorithm> (its C++20 ranges are a tenth of a unit's parse): std::min and std::max come
// with <string>.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef KJUDGE_LITE_HALF
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#endif

namespace c10 {

enum class ScalarType : int8_t {
    Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
    ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10, Bool = 11, BFloat16 = 15,
    Undefined = -1
};

enum class DeviceType : int8_t { CPU = 0, CUDA = 1, HIP = 6, Meta = 14 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kHIP = DeviceType::HIP;
constexpr DeviceType kMeta = DeviceType::Meta;
using DeviceIndex = int8_t;

inline const char* toString(ScalarType t) { return kjl_dtype_name(static_cast<int8_t>(t)); }
// Streaming to a std::ostream (a template: <ostream> costs nvcc ~1 s a unit, and a source that
// streams has included it); TORCH_CHECK's messages are built by str() below without streams.
template <class Stream>
Stream& operator<<(Stream& os, ScalarType t) {
    return os << toString(t);
}
inline size_t elementSize(ScalarType t) { return static_cast<size_t>(kjl_element_size(static_cast<int8_t>(t))); }

class Error : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
};

// c10::str without <sstream> (~1.2 s of nvcc a unit): the argument kinds TORCH_CHECK messages
// use, printed as an ostream prints them. Another kind does not compile, and the unit is built
// the regular way.
namespace detail {
struct Message {
    std::string text;
};
inline void put(Message& m, const char* v) { m.text += v; }
inline void put(Message& m, const std::string& v) { m.text += v; }
inline void put(Message& m, std::string_view v) { m.text += v; }
inline void put(Message& m, char v) { m.text += v; }
inline void put(Message& m, bool v) { m.text += v ? '1' : '0'; }
template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
void put(Message& m, T v) {
    m.text += std::to_string(v);
}
template <class T, std::enable_if_t<std::is_enum_v<T>, int> = 0>
void put(Message& m, T v) {
    m.text += std::to_string(static_cast<std::underlying_type_t<T>>(v));
}
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
void put(Message& m, T v) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(v));
    m.text += buffer;
}
inline void put(Message& m, ScalarType t) { m.text += toString(t); }
inline void append(Message&) {}
template <typename T, typename... Rest>
void append(Message& m, const T& first, const Rest&... rest) {
    put(m, first);
    append(m, rest...);
}
}  // namespace detail

template <typename... Args>
std::string str(const Args&... args) {
    detail::Message m;
    detail::append(m, args...);
    return m.text;
}

template <typename T>
class ArrayRef {
   public:
    ArrayRef() = default;
    ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT: implicit, as c10's
    ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
    ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"  // as c10's: a braced list lives for the call
    ArrayRef(const std::initializer_list<T>& l) : data_(l.begin()), size_(l.size()) {}  // NOLINT
#pragma GCC diagnostic pop
    template <size_t N>
    ArrayRef(const T (&a)[N]) : data_(a), size_(N) {}  // NOLINT
    const T* data() const { return data_; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const T* begin() const { return data_; }
    const T* end() const { return data_ + size_; }
    const T& operator[](size_t i) const { return data_[i]; }
    const T& front() const { return data_[0]; }
    const T& back() const { return data_[size_ - 1]; }
    const T& at(size_t i) const {
        if (i >= size_) throw std::out_of_range("ArrayRef: index out of range");
        return data_[i];
    }
    bool equals(ArrayRef other) const {
        if (size_ != other.size_) return false;
        for (size_t i = 0; i < size_; ++i)
            if (!(data_[i] == other.data_[i])) return false;
        return true;
    }
    ArrayRef slice(size_t start, size_t length) const { return ArrayRef(data_ + start, length); }
    ArrayRef slice(size_t start) const { return slice(start, size_ - start); }
    std::vector<T> vec() const { return std::vector<T>(data_, data_ + size_); }
    operator std::vector<T>() const { return vec(); }  // NOLINT

   private:
    const T* data_ = nullptr;
    size_t size_ = 0;
};
using IntArrayRef = ArrayRef<int64_t>;

// As c10's: `a.sizes() == b.sizes()` (and against a std::vector) compares the elements.
template <typename T>
bool operator==(ArrayRef<T> a, ArrayRef<T> b) { return a.equals(b); }
template <typename T>
bool operator!=(ArrayRef<T> a, ArrayRef<T> b) { return !a.equals(b); }
template <typename T>
bool operator==(const std::vector<T>& a, ArrayRef<T> b) { return ArrayRef<T>(a).equals(b); }
template <typename T>
bool operator!=(const std::vector<T>& a, ArrayRef<T> b) { return !ArrayRef<T>(a).equals(b); }
template <typename T>
bool operator==(ArrayRef<T> a, const std::vector<T>& b) { return a.equals(ArrayRef<T>(b)); }
template <typename T>
bool operator!=(ArrayRef<T> a, const std::vector<T>& b) { return !a.equals(ArrayRef<T>(b)); }

template <class Stream>
Stream& operator<<(Stream& os, IntArrayRef a) {
    os << "[";
    for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
    return os << "]";
}
namespace detail {
inline void put(Message& m, IntArrayRef a) {
    m.text += '[';
    for (size_t i = 0; i < a.size(); ++i) m.text += (i ? ", " : "") + std::to_string(a[i]);
    m.text += ']';
}
}  // namespace detail

struct Device {
    Device(DeviceType type, int index = -1) : type_(type), index_(static_cast<DeviceIndex>(index)) {}  // NOLINT
    DeviceType type() const { return type_; }
    DeviceIndex index() const { return index_; }
    bool has_index() const { return index_ >= 0; }
    bool is_cuda() const { return type_ == DeviceType::CUDA; }
    bool is_cpu() const { return type_ == DeviceType::CPU; }
    bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
    bool operator!=(const Device& o) const { return !(*this == o); }

   private:
    DeviceType type_;
    DeviceIndex index_;
};

inline std::string toString(const Device& d) {
    std::string s = d.is_cuda() ? "cuda" : d.is_cpu() ? "cpu" : "device";
    return d.has_index() ? s + ":" + std::to_string(static_cast<int>(d.index())) : s;
}
template <class Stream>
Stream& operator<<(Stream& os, const Device& d) {
    return os << toString(d);
}
namespace detail {
inline void put(Message& m, const Device& d) { m.text += toString(d); }
}  // namespace detail

template <typename T>
struct CppTypeToScalarType;
#define KJL_SCALAR(cpp, name) \
    template <>               \
    struct CppTypeToScalarType<cpp> : std::integral_constant<ScalarType, ScalarType::name> {};
KJL_SCALAR(uint8_t, Byte)
KJL_SCALAR(int8_t, Char)
KJL_SCALAR(int16_t, Short)
KJL_SCALAR(int32_t, Int)
KJL_SCALAR(int64_t, Long)
KJL_SCALAR(float, Float)
KJL_SCALAR(double, Double)
KJL_SCALAR(bool, Bool)
#ifdef KJUDGE_LITE_HALF
KJL_SCALAR(c10::Half, Half)
KJL_SCALAR(c10::BFloat16, BFloat16)
#endif
#undef KJL_SCALAR

}  // namespace c10

namespace at {
using c10::ArrayRef;
using c10::Device;
using c10::DeviceType;
using c10::IntArrayRef;
using c10::ScalarType;
using c10::kCPU;
using c10::kCUDA;
using c10::kHIP;
using c10::kMeta;
#ifdef KJUDGE_LITE_HALF
using c10::BFloat16;
using c10::Half;
#endif
constexpr auto kByte = ScalarType::Byte;
constexpr auto kChar = ScalarType::Char;
constexpr auto kShort = ScalarType::Short;
constexpr auto kInt = ScalarType::Int;
constexpr auto kLong = ScalarType::Long;
constexpr auto kHalf = ScalarType::Half;
constexpr auto kFloat = ScalarType::Float;
constexpr auto kDouble = ScalarType::Double;
constexpr auto kBool = ScalarType::Bool;
constexpr auto kBFloat16 = ScalarType::BFloat16;
using c10::toString;

class TensorOptions {
   public:
    TensorOptions() = default;
    TensorOptions(ScalarType t) { o_.dtype = static_cast<int8_t>(t); }  // NOLINT
    TensorOptions(Device d) { set_device(d); }                          // NOLINT
    TensorOptions(DeviceType t) { set_device(Device(t)); }              // NOLINT
    TensorOptions dtype(ScalarType t) const {
        TensorOptions r = *this;
        r.o_.dtype = static_cast<int8_t>(t);
        return r;
    }
    template <typename T>
    TensorOptions dtype() const {
        return dtype(c10::CppTypeToScalarType<T>::value);
    }
    TensorOptions device(Device d) const {
        TensorOptions r = *this;
        r.set_device(d);
        return r;
    }
    TensorOptions device(DeviceType t, int index = -1) const { return device(Device(t, index)); }
    TensorOptions requires_grad(bool on) const {
        TensorOptions r = *this;
        r.o_.requires_grad = on ? 1 : 0;
        return r;
    }
    const KjlOptions& raw() const { return o_; }

   private:
    void set_device(Device d) {
        o_.device_type = static_cast<int8_t>(d.type());
        o_.device_index = d.index();
    }
    KjlOptions o_{-1, -1, -1, 0};
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
template <typename T>
inline TensorOptions dtype() {
    return TensorOptions().dtype<T>();
}
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool on = true) { return TensorOptions().requires_grad(on); }

class Tensor {
   public:
    Tensor() = default;
    static Tensor adopt(void* impl) {  // takes over one reference
        Tensor t;
        t.impl_ = impl;
        return t;
    }
    static Tensor borrow(void* impl) {
        if (impl != nullptr) kjl_retain(impl);
        return adopt(impl);
    }
    Tensor(const Tensor& o) : impl_(o.impl_) {
        if (impl_ != nullptr) kjl_retain(impl_);
    }
    Tensor(Tensor&& o) noexcept : impl_(o.impl_) { o.impl_ = nullptr; }
    Tensor& operator=(const Tensor& o) {
        if (this != &o) {
            if (o.impl_ != nullptr) kjl_retain(o.impl_);
            reset();
            impl_ = o.impl_;
        }
        return *this;
    }
    Tensor& operator=(Tensor&& o) noexcept {
        if (this != &o) {
            reset();
            impl_ = o.impl_;
            o.impl_ = nullptr;
        }
        return *this;
    }
    ~Tensor() { reset(); }
    void* release() {
        void* p = impl_;
        impl_ = nullptr;
        return p;
    }
    void* unsafeGetTensorImpl() const { return impl_; }

    bool defined() const { return impl_ != nullptr; }
    int64_t numel() const { return kjl_numel(get()); }
    int64_t dim() const { return kjl_dim(get()); }
    int64_t ndimension() const { return dim(); }
    IntArrayRef sizes() const { return IntArrayRef(kjl_sizes(get()), static_cast<size_t>(dim())); }
    IntArrayRef strides() const { return IntArrayRef(kjl_strides(get()), static_cast<size_t>(dim())); }
    int64_t size(int64_t d) const { return sizes()[wrap(d)]; }
    int64_t stride(int64_t d) const { return strides()[wrap(d)]; }
    int64_t storage_offset() const { return kjl_storage_offset(get()); }
    ScalarType scalar_type() const { return static_cast<ScalarType>(kjl_dtype(get())); }
    ScalarType dtype() const { return scalar_type(); }
    int64_t element_size() const { return kjl_element_size(kjl_dtype(get())); }
    int64_t itemsize() const { return element_size(); }
    int64_t nbytes() const { return numel() * element_size(); }
    Device device() const { return Device(static_cast<DeviceType>(kjl_device_type(get())), kjl_device_index(get())); }
    int64_t get_device() const { return is_cuda() ? device().index() : -1; }
    bool is_cuda() const { return kjl_device_type(get()) == static_cast<int8_t>(DeviceType::CUDA); }
    bool is_cpu() const { return kjl_device_type(get()) == static_cast<int8_t>(DeviceType::CPU); }
    bool is_contiguous() const { return kjl_is_contiguous(get()) != 0; }
    bool requires_grad() const { return kjl_requires_grad(get()) != 0; }
    bool is_floating_point() const {
        auto t = scalar_type();
        return t == kFloat || t == kDouble || t == kHalf || t == kBFloat16;
    }
    TensorOptions options() const { return TensorOptions().dtype(scalar_type()).device(device()); }

    void* data_ptr() const { return kjl_data_ptr(get()); }
    const void* const_data_ptr() const { return data_ptr(); }
    void* mutable_data_ptr() const { return data_ptr(); }
    template <typename T>
    T* data_ptr() const {
        check_type<T>("data_ptr");
        return static_cast<T*>(kjl_data_ptr(get()));
    }
    template <typename T>
    const T* const_data_ptr() const {
        return data_ptr<std::remove_const_t<T>>();
    }
    template <typename T>
    T* mutable_data_ptr() const {
        return data_ptr<T>();
    }
    template <typename T>
    T item() const {
        if constexpr (std::is_floating_point_v<T>) {
            return static_cast<T>(kjl_item_double(get()));
        } else {
            return static_cast<T>(kjl_item_int(get()));
        }
    }

    Tensor contiguous() const { return op(KJL_CONTIGUOUS); }
    Tensor clone() const { return op(KJL_CLONE); }
    Tensor detach() const { return op(KJL_DETACH); }
    Tensor view(IntArrayRef s) const { return op(KJL_VIEW, s); }
    Tensor reshape(IntArrayRef s) const { return op(KJL_RESHAPE, s); }
    Tensor permute(IntArrayRef s) const { return op(KJL_PERMUTE, s); }
    Tensor expand(IntArrayRef s) const { return op(KJL_EXPAND, s); }
    Tensor transpose(int64_t a, int64_t b) const { return op(KJL_TRANSPOSE, {a, b}); }
    Tensor t() const { return op(KJL_T); }
    Tensor flatten(int64_t start = 0, int64_t end = -1) const { return op(KJL_FLATTEN, {start, end}); }
    Tensor unsqueeze(int64_t d) const { return op(KJL_UNSQUEEZE, {d}); }
    Tensor squeeze() const { return op(KJL_SQUEEZE); }
    Tensor squeeze(int64_t d) const { return op(KJL_SQUEEZE_DIM, {d}); }
    Tensor narrow(int64_t d, int64_t start, int64_t length) const { return op(KJL_NARROW, {d, start, length}); }
    Tensor select(int64_t d, int64_t index) const { return op(KJL_SELECT, {d, index}); }
    Tensor slice(int64_t d = 0, std::optional<int64_t> start = std::nullopt, std::optional<int64_t> end = std::nullopt,
                 int64_t step = 1) const {
        return op(KJL_SLICE, {d, start.value_or(0), end.value_or(INT64_MAX), step});
    }
    Tensor view_as(const Tensor& o) const { return op(KJL_VIEW_AS, {}, 0, o.get()); }
    Tensor reshape_as(const Tensor& o) const { return op(KJL_RESHAPE_AS, {}, 0, o.get()); }
    Tensor expand_as(const Tensor& o) const { return op(KJL_EXPAND_AS, {}, 0, o.get()); }
    Tensor to(ScalarType t) const { return op(KJL_TO_DTYPE, {static_cast<int64_t>(t)}); }
    Tensor to(Device d) const { return op(KJL_TO_DEVICE, {static_cast<int64_t>(d.type()), d.index()}); }
    Tensor cuda() const { return to(Device(DeviceType::CUDA)); }
    Tensor cpu() const { return to(Device(DeviceType::CPU)); }
    Tensor& zero_() {
        op(KJL_ZERO_);
        return *this;
    }
    Tensor& fill_(double v) {
        op(KJL_FILL_, {}, v);
        return *this;
    }
    Tensor& copy_(const Tensor& src) {
        op(KJL_COPY_, {}, 0, src.get());
        return *this;
    }

   private:
    void reset() {
        if (impl_ != nullptr) kjl_release(impl_);
        impl_ = nullptr;
    }
    void* get() const {
        if (impl_ == nullptr) throw c10::Error("the tensor is undefined (kjudge lite API)");
        return impl_;
    }
    size_t wrap(int64_t d) const {
        int64_t n = dim();
        int64_t w = d < 0 ? d + n : d;
        if (w < 0 || w >= n) {
            throw c10::Error(c10::str("Dimension out of range (expected to be in range of [", -n, ", ", n - 1,
                                      "], but got ", d, ")"));
        }
        return static_cast<size_t>(w);
    }
    template <typename T>
    void check_type(const char* what) const {
        using U = std::remove_cv_t<T>;
        if constexpr (std::is_same_v<U, void>) {
            return;
        } else {
            auto expected = c10::CppTypeToScalarType<U>::value;
            if (scalar_type() != expected) {
                throw c10::Error(c10::str("expected scalar type ", toString(expected), " but found ",
                                          toString(scalar_type()), " (", what, ")"));
            }
        }
    }
    Tensor op(int32_t code, IntArrayRef ints = {}, double value = 0, void* other = nullptr) const {
        return adopt(kjl_op(code, get(), ints.data(), static_cast<int64_t>(ints.size()), value, other));
    }
    void* impl_ = nullptr;
};

inline std::optional<Device> device_of(const Tensor& t) {
    if (!t.defined()) return std::nullopt;
    return t.device();
}

namespace detail {
inline Tensor factory(int32_t kind, IntArrayRef sizes, const TensorOptions& o, double value = 0,
                      const Tensor* like = nullptr, IntArrayRef strides = {}) {
    return Tensor::adopt(kjl_factory(kind, sizes.data(), static_cast<int64_t>(sizes.size()),
                                     strides.empty() ? nullptr : strides.data(), o.raw(), value,
                                     like != nullptr ? like->unsafeGetTensorImpl() : nullptr));
}
}  // namespace detail

inline Tensor empty(IntArrayRef s, TensorOptions o = {}) { return detail::factory(KJL_EMPTY, s, o); }
inline Tensor zeros(IntArrayRef s, TensorOptions o = {}) { return detail::factory(KJL_ZEROS, s, o); }
inline Tensor ones(IntArrayRef s, TensorOptions o = {}) { return detail::factory(KJL_ONES, s, o); }
inline Tensor full(IntArrayRef s, double v, TensorOptions o = {}) { return detail::factory(KJL_FULL, s, o, v); }
inline Tensor empty_strided(IntArrayRef s, IntArrayRef st, TensorOptions o = {}) {
    return detail::factory(KJL_EMPTY_STRIDED, s, o, 0, nullptr, st);
}
inline Tensor empty_like(const Tensor& t, TensorOptions o = {}) { return detail::factory(KJL_EMPTY_LIKE, {}, o, 0, &t); }
inline Tensor zeros_like(const Tensor& t, TensorOptions o = {}) { return detail::factory(KJL_ZEROS_LIKE, {}, o, 0, &t); }
inline Tensor ones_like(const Tensor& t, TensorOptions o = {}) { return detail::factory(KJL_ONES_LIKE, {}, o, 0, &t); }
inline Tensor full_like(const Tensor& t, double v, TensorOptions o = {}) {
    return detail::factory(KJL_FULL_LIKE, {}, o, v, &t);
}
inline Tensor arange(int64_t end, TensorOptions o = {}) { return detail::factory(KJL_ARANGE, {end}, o); }

inline int get_num_threads() { return kjl_num_threads(); }
inline bool in_parallel_region() {
#ifdef _OPENMP
    return omp_in_parallel() != 0;
#else
    return false;
#endif
}

// As ATen's OpenMP parallel_for: [begin, end) split into one chunk per thread, of at least
// `grain_size` elements, over at most at::get_num_threads() threads; serial when the range is
// small, inside another parallel region, or without OpenMP. The first exception is rethrown.
template <class F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
    if (begin >= end) return;
    int64_t threads = get_num_threads();
    if (grain_size > 0) threads = std::min<int64_t>(threads, (end - begin + grain_size - 1) / grain_size);
    if (threads <= 1 || in_parallel_region()) {
        f(begin, end);
        return;
    }
#ifdef _OPENMP
    std::exception_ptr error;
    bool failed = false;  // set once, by the first thread to fail (no <atomic>: ~0.9 s of nvcc)
#pragma omp parallel num_threads(static_cast<int>(threads))
    {
        int64_t n = omp_get_num_threads();
        int64_t chunk = (end - begin + n - 1) / n;
        int64_t lo = begin + omp_get_thread_num() * chunk;
        if (lo < end) {
            try {
                f(lo, std::min(end, lo + chunk));
            } catch (...) {
                if (!__atomic_test_and_set(&failed, __ATOMIC_ACQ_REL)) error = std::current_exception();
            }
        }
    }
    if (error) std::rethrow_exception(error);
#else
    f(begin, end);
#endif
}

}  // namespace at

#include <kjudge_lite/torch_names.h>

namespace kjudge_lite {
inline std::string check_message(const char* fallback) { return fallback; }
template <typename... Args>
std::string check_message(const char*, const Args&... args) {
    return ::c10::str(args...);
}
}  // namespace kjudge_lite

#define KJL_STRINGIFY_(x) #x
// As PyTorch's: the message is the arguments joined, or a default naming the condition.
#define TORCH_CHECK(cond, ...)                                                                        \
    do {                                                                                              \
        if (!(cond)) {                                                                                \
            throw ::c10::Error(::kjudge_lite::check_message(                                          \
                "Expected " KJL_STRINGIFY_(cond) " to be true, but got false.", ##__VA_ARGS__));      \
        }                                                                                             \
    } while (0)
#define TORCH_CHECK_VALUE(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define AT_ASSERT(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define AT_ERROR(...) throw ::c10::Error(::c10::str(__VA_ARGS__))

// AT_DISPATCH_*: call the lambda with `scalar_t` bound to the tensor's element type.
#define KJL_CASE(enum_name, cpp, ...) \
    case ::at::ScalarType::enum_name: { \
        using scalar_t = cpp;           \
        return __VA_ARGS__();           \
    }
#define KJL_DISPATCH(TYPE, NAME, CASES)                                                                     \
    [&] {                                                                                                   \
        const ::at::ScalarType _kjl_st = (TYPE);                                                            \
        switch (_kjl_st) {                                                                                  \
            CASES                                                                                           \
            default:                                                                                        \
                throw ::c10::Error(::c10::str('"', NAME, "\" not implemented for '", ::c10::toString(_kjl_st), "'")); \
        }                                                                                                   \
    }()
#define KJL_FLOATING_CASES(...) KJL_CASE(Double, double, __VA_ARGS__) KJL_CASE(Float, float, __VA_ARGS__)
#define KJL_INTEGRAL_CASES(...)                                                            \
    KJL_CASE(Byte, uint8_t, __VA_ARGS__) KJL_CASE(Char, int8_t, __VA_ARGS__)               \
    KJL_CASE(Int, int32_t, __VA_ARGS__) KJL_CASE(Long, int64_t, __VA_ARGS__)               \
    KJL_CASE(Short, int16_t, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) KJL_DISPATCH(TYPE, NAME, KJL_FLOATING_CASES(__VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) KJL_DISPATCH(TYPE, NAME, KJL_INTEGRAL_CASES(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...) \
    KJL_DISPATCH(TYPE, NAME, KJL_INTEGRAL_CASES(__VA_ARGS__) KJL_FLOATING_CASES(__VA_ARGS__))
#ifdef KJUDGE_LITE_HALF
#define KJL_HALF_CASE(...) KJL_CASE(Half, ::c10::Half, __VA_ARGS__)
#define KJL_BF16_CASE(...) KJL_CASE(BFloat16, ::c10::BFloat16, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...) \
    KJL_DISPATCH(TYPE, NAME, KJL_FLOATING_CASES(__VA_ARGS__) KJL_HALF_CASE(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND2(T1, T2, TYPE, NAME, ...) \
    KJL_DISPATCH(TYPE, NAME, KJL_FLOATING_CASES(__VA_ARGS__) KJL_EXTRA_CASE(T1, __VA_ARGS__) KJL_EXTRA_CASE(T2, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND(T1, TYPE, NAME, ...) \
    KJL_DISPATCH(TYPE, NAME, KJL_FLOATING_CASES(__VA_ARGS__) KJL_EXTRA_CASE(T1, __VA_ARGS__))
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...) \
    KJL_DISPATCH(TYPE, NAME, KJL_HALF_CASE(__VA_ARGS__) KJL_BF16_CASE(__VA_ARGS__))
// The extra type of *_AND / *_AND2 is named by its ScalarType (at::kHalf, at::ScalarType::BFloat16).
#define KJL_EXTRA_CASE(T, ...)                                       \
    case (T): {                                                      \
        using scalar_t = ::kjudge_lite::cpp_type_t<(T)>;             \
        return __VA_ARGS__();                                        \
    }
#endif

namespace kjudge_lite {
#ifdef KJUDGE_LITE_HALF
template <::c10::ScalarType S>
struct CppType;
template <>
struct CppType<::c10::ScalarType::Half> {
    using type = ::c10::Half;
};
template <>
struct CppType<::c10::ScalarType::BFloat16> {
    using type = ::c10::BFloat16;
};
template <>
struct CppType<::c10::ScalarType::Bool> {
    using type = bool;
};
template <::c10::ScalarType S>
using cpp_type_t = typename CppType<S>::type;
#endif

// ---- The entry's trampoline: KjlValue arguments -> the C++ signature -> a KjlValue result. ----
struct TypeMismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <typename T>
struct Arg;

template <>
struct Arg<at::Tensor> {
    static at::Tensor get(const KjlValue& v) {
        if (v.tag != KJL_TENSOR) throw TypeMismatch("expected a Tensor");
        return at::Tensor::borrow(v.tensor);
    }
};
template <typename T>
struct Arg<std::optional<T>> {
    static std::optional<T> get(const KjlValue& v) {
        if (v.tag == KJL_NONE) return std::nullopt;
        return Arg<T>::get(v);
    }
};
template <typename T>
struct Arg<std::vector<T>> {
    static std::vector<T> get(const KjlValue& v) {
        if (v.tag != KJL_LIST && v.tag != KJL_TUPLE) throw TypeMismatch("expected a list");
        std::vector<T> out;
        out.reserve(static_cast<size_t>(v.len));
        for (int64_t i = 0; i < v.len; ++i) out.push_back(Arg<T>::get(v.items[i]));
        return out;
    }
};
template <>
struct Arg<bool> {
    static bool get(const KjlValue& v) {
        if (v.tag == KJL_BOOL || v.tag == KJL_INT) return v.i != 0;
        throw TypeMismatch("expected a bool");
    }
};
template <typename T>
struct ArgNumber {
    static T get(const KjlValue& v) {
        if constexpr (std::is_floating_point_v<T>) {
            if (v.tag == KJL_DOUBLE) return static_cast<T>(v.d);
            if (v.tag == KJL_INT || v.tag == KJL_BOOL) return static_cast<T>(v.i);
            throw TypeMismatch("expected a float");
        } else {
            if (v.tag == KJL_INT || v.tag == KJL_BOOL) return static_cast<T>(v.i);
            throw TypeMismatch("expected an int");
        }
    }
};
template <> struct Arg<float> : ArgNumber<float> {};
template <> struct Arg<double> : ArgNumber<double> {};
template <> struct Arg<int> : ArgNumber<int> {};
template <> struct Arg<long> : ArgNumber<long> {};
template <> struct Arg<long long> : ArgNumber<long long> {};
template <> struct Arg<unsigned> : ArgNumber<unsigned> {};
template <> struct Arg<unsigned long> : ArgNumber<unsigned long> {};

inline KjlValue none() {
    KjlValue v{};
    v.tag = KJL_NONE;
    return v;
}
inline KjlValue make(at::Tensor t) {
    KjlValue v{};
    v.tag = KJL_TENSOR;
    v.tensor = t.release();
    return v;
}
inline KjlValue make(bool b) {
    KjlValue v{};
    v.tag = KJL_BOOL;
    v.i = b ? 1 : 0;
    return v;
}
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
KjlValue make(T i) {
    KjlValue v{};
    v.tag = KJL_INT;
    v.i = static_cast<int64_t>(i);
    return v;
}
template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
KjlValue make(T d) {
    KjlValue v{};
    v.tag = KJL_DOUBLE;
    v.d = static_cast<double>(d);
    return v;
}
template <typename T>
KjlValue make(std::vector<T> items) {
    KjlValue v{};
    v.tag = KJL_LIST;
    v.len = static_cast<int64_t>(items.size());
    v.items = new KjlValue[items.size() ? items.size() : 1];
    for (size_t i = 0; i < items.size(); ++i) v.items[i] = make(std::move(items[i]));
    return v;
}
template <typename... T>
KjlValue make(std::tuple<T...> items) {
    KjlValue v{};
    v.tag = KJL_TUPLE;
    v.len = static_cast<int64_t>(sizeof...(T));
    v.items = new KjlValue[sizeof...(T) ? sizeof...(T) : 1];
    size_t i = 0;
    std::apply([&](auto&&... item) { ((v.items[i++] = make(std::move(item))), ...); }, std::move(items));
    return v;
}
template <typename A, typename B>
KjlValue make(std::pair<A, B> items) {
    return make(std::tuple<A, B>(std::move(items.first), std::move(items.second)));
}

inline void copy_message(const char* what, char* error, size_t error_len) {
    if (error_len == 0) return;
    std::strncpy(error, what, error_len - 1);
    error[error_len - 1] = '\0';
}

template <typename R, typename... A, size_t... I>
KjlValue call_with(R (*fn)(A...), const KjlValue* args, std::index_sequence<I...>) {
    if constexpr (std::is_void_v<R>) {
        fn(Arg<std::decay_t<A>>::get(args[I])...);
        return none();
    } else {
        return make(fn(Arg<std::decay_t<A>>::get(args[I])...));
    }
}

template <typename R, typename... A>
constexpr int64_t arity(R (*)(A...)) {
    return static_cast<int64_t>(sizeof...(A));
}

template <typename R, typename... A>
int invoke(R (*fn)(A...), const KjlValue* args, int64_t nargs, KjlValue* result, char* error, size_t error_len) {
    if (nargs != static_cast<int64_t>(sizeof...(A))) {
        copy_message(c10::str("takes ", sizeof...(A), " arguments (", nargs, " given)").c_str(), error, error_len);
        return 2;
    }
    try {
        *result = call_with(fn, args, std::index_sequence_for<A...>{});
        return 0;
    } catch (const TypeMismatch& e) {
        copy_message(e.what(), error, error_len);
        return 2;
    } catch (const std::exception& e) {
        copy_message(e.what(), error, error_len);
        return 1;
    }
}
}  // namespace kjudge_lite

// What kjudge appends to a lite unit: one trampoline per entry and the module's PyInit.
#define KJUDGE_LITE_TRAMPOLINE(fn)                                                                      \
    [](const KjlValue* a, int64_t n, KjlValue* r, char* e, size_t el) -> int {                          \
        return ::kjudge_lite::invoke(&fn, a, n, r, e, el);                                              \
    }
