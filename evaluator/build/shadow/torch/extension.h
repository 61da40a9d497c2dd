// kjudge fast path for device translation units (nvcc / hipcc).
//
// This directory is put first on the include path of a .cu/.hip unit whose Python binding
// kjudge generates in a separate host unit. The real <torch/extension.h> pulls in all of ATen
// (every operator's declaration), the C++ frontend (nn, optim, data) and pybind11; nvcc parses
// all of it three times (cudafe++, cicc, the host compiler). A kernel's host code needs the
// Tensor class, the factory functions, dispatch macros and TORCH_CHECK: this header gives those
// and the torch:: names <torch/types.h> adds. Measured on the 2-core host, ReLU with
// AT_DISPATCH and factories: 45.6 s with <torch/types.h>, 20.9 s with this header.
// A unit that needs more (torch::matmul, pybind11, torch::nn, ...) fails with a missing
// declaration and is rebuilt with the real header (evaluator/build/engine.py).
#pragma once
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/full.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/Exception.h>
#include <cmath>
#include <optional>
#include <vector>

#include "../../lite_api/include/kjudge_lite/torch_names.h"
