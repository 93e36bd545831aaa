// The one definition of GpuOpTest (gpu_op_test.hpp), linked into each op's test binary.
#include "gpu_op_test.hpp"

#include "reference.hpp"

namespace imgpipe::testing {
namespace {

TEST_P(GpuOpTest, MatchesReference) {
  SKIP_WITHOUT_DEVICE();
  const auto& [path, op_case, set] = GetParam();
  for (const testing::NamedImage& sample : load(set)) {
    const Op op = op_case.make(sample.image.size());
    const Image expected = reference::apply(op, sample.image);
    const Image actual = run_device_chain(path, Chain{{op}}, sample.image);
    EXPECT_TRUE(within(actual, expected, op_case.tolerance))
        << path_name(path) << " path, " << to_string(op) << " on " << describe(sample);
  }
}

}  // namespace
}  // namespace imgpipe::testing
