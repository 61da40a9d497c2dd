// Does not compile on purpose: `undeclared_buffer` is never declared.
// Expected verdict: compile_error.
#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) {
    auto out = torch::empty_like(x);
    undeclared_buffer[0] = 1.0f;
    return out;
}
