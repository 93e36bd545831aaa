// gray (kernels/gray.cu) on both GPU paths against the reference, on the photographs and on sizes no tile
// divides, within ±1.
#include "gpu_op_test.hpp"

#include <vector>

namespace imgpipe::testing {
namespace {

std::vector<OpCase> gray_cases() { return {{"gray", fixed_op(Gray{}), 1}}; }

INSTANTIATE_TEST_SUITE_P(AllOps, GpuOpTest, on_both_paths_and_image_sets(gray_cases()), gpu_op_test_name);

}  // namespace
}  // namespace imgpipe::testing
