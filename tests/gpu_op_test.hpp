// GpuOpTest: one op on both GPU paths against the reference, as a one-op chain on the device, on the
// photographs and on odd sizes. Geometric ops must be exact; interpolation, filters, gray and normalize within
// ±1 per 8-bit value. The test is defined once (gpu_op_test.cpp); each op's test binary links it and
// instantiates it with that op's cases:
//   INSTANTIATE_TEST_SUITE_P(AllOps, GpuOpTest, on_both_paths_and_image_sets(gray_cases()), gpu_op_test_name);
#pragma once

#include "chain.hpp"
#include "gpu_backend.hpp"
#include "gpu_test_support.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace imgpipe::testing {

struct OpCase {
  std::string name;
  std::function<Op(Size)> make;  // the op for an input of this size
  int tolerance;
};

inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

// An op that does not depend on the input size.
inline std::function<Op(Size)> fixed_op(Op op) {
  return [op](Size) { return op; };
}

class GpuOpTest : public ::testing::TestWithParam<std::tuple<GpuPath, OpCase, Images>> {};

inline auto on_both_paths_and_image_sets(std::vector<OpCase> cases) {
  return ::testing::Combine(::testing::Values(GpuPath::naive, GpuPath::optimized),
                            ::testing::ValuesIn(std::move(cases)),
                            ::testing::Values(Images::photos, Images::odd_sizes));
}

// naive_gray_photos, optimized_resize_linear_up_odd_sizes, ...
inline std::string gpu_op_test_name(const ::testing::TestParamInfo<GpuOpTest::ParamType>& info) {
  return path_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name + "_" +
         images_name(std::get<2>(info.param));
}

}  // namespace imgpipe::testing
