// The torch:: names <torch/types.h> adds over at:: (dtype aliases), for kjudge's two stand-ins
// of <torch/extension.h>: the lite API (core.h) and the light header (build/shadow/), each of
// which has declared at:: before including this.
#pragma once

namespace torch {
using namespace at;  // NOLINT: as <torch/types.h> does
using Dtype = at::ScalarType;
constexpr auto kUInt8 = at::kByte;
constexpr auto kInt8 = at::kChar;
constexpr auto kInt16 = at::kShort;
constexpr auto kInt32 = at::kInt;
constexpr auto kInt64 = at::kLong;
constexpr auto kFloat16 = at::kHalf;
constexpr auto kFloat32 = at::kFloat;
constexpr auto kFloat64 = at::kDouble;
}  // namespace torch
