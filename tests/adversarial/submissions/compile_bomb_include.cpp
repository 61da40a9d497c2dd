// Attack: a compile bomb -- #include a device that never ends. Expected: the compiler is
// killed by the build's limits (time, memory or file size); verdict `compile_error`.
#include "/dev/zero"
#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) { return x; }
