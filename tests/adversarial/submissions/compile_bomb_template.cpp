// Attack: a compile bomb -- compile-time recursion that does not terminate (each level
// instantiates the next with a raised depth limit in mind). Expected: the compiler stops at
// its template depth limit or is killed by the build's limits; verdict `compile_error`.
template <unsigned long N> struct Boom {
    static constexpr unsigned long value = Boom<N + 1>::value + Boom<N + 2>::value;
};
static_assert(Boom<0>::value > 0, "never reached");

#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) { return x; }
