// Crashes on purpose: writes through a null pointer (SIGSEGV) on the first call.
// Expected verdict: runtime_error, and the next evaluation still works.
#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) {
    volatile float* nowhere = nullptr;
    nowhere[x.numel()] = 1.0f;
    return x;
}
