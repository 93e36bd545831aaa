// resize (kernels/resize.cu) on both GPU paths against the reference: linear and nearest, down and up, on the
// photographs and on sizes no tile divides. Nearest must be exact, linear within ±1.
#include "gpu_op_test.hpp"

#include <algorithm>
#include <vector>

namespace imgpipe::testing {
namespace {

std::vector<OpCase> resize_cases() {
  const auto resize = [](int wn, int wd, int hn, int hd, int plus, Interp interp) {
    return [=](Size s) -> Op {
      return Resize{{std::max(1, s.width * wn / wd + plus), std::max(1, s.height * hn / hd + plus)}, interp};
    };
  };
  return {
      {"resize_linear_down", resize(2, 3, 3, 5, 0, Interp::linear), 1},
      {"resize_linear_half", resize(1, 2, 1, 2, 0, Interp::linear), 1},
      {"resize_linear_up", resize(3, 2, 7, 4, 1, Interp::linear), 1},
      {"resize_nearest_down", resize(2, 3, 3, 5, 0, Interp::nearest), 0},
      {"resize_nearest_up", resize(3, 2, 7, 4, 1, Interp::nearest), 0},
  };
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuOpTest, on_both_paths_and_image_sets(resize_cases()), gpu_op_test_name);

}  // namespace
}  // namespace imgpipe::testing
