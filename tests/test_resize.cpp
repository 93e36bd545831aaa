// resize (kernels/resize.cu) on both GPU paths against the reference: linear and nearest, down and up, on the
// photographs and on sizes no tile divides. Nearest must be exact, linear within ±1. The optimized path's
// interleaved bilinear, batched, against the naive kernels byte for byte.
#include "gpu_op_test.hpp"
#include "resize.cuh"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
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

// resize_linear_aos on three frames per launch whose rows and frames start at every alignment (pitch 3w + 1, the
// first frame one byte into its buffer, 5 bytes between frames), down, up and to one pixel: each frame the naive
// kernel's bytes (fast) or the exact naive kernel's (exact), no byte between rows or frames written. A batch runs
// the batched kernel at every size, down to 1x1 frames (only a lone small frame takes the naive kernel).
TEST(ResizeInterleaved, BatchesAtAnyAlignmentGiveTheNaiveKernelsBytes) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<std::pair<Size, Size>> sizes = {{{1, 1}, {1, 1}},     {{3, 7}, {1, 1}},     {{1, 9}, {5, 2}},
                                                    {{203, 117}, {135, 70}}, {{203, 117}, {407, 301}},
                                                    {{640, 360}, {427, 240}}, {{33, 65}, {33, 31}},
                                                    {{2001, 1117}, {3841, 2161}}, {{3841, 2161}, {2001, 1117}}};
  for (const bool exact : {false, true}) {
    for (const auto& [in_size, out_size] : sizes) {
      const Device device;
      constexpr int kFrames = 3;
      const FrameBatch in(device, in_size, kFrames, kMisaligned), out(device, out_size, kFrames, kMisaligned);
      std::vector<Image> frames;
      for (int f = 0; f < kFrames; ++f) {
        frames.push_back(testing::random_image(in_size, 70u + static_cast<std::uint32_t>(f)));
        in.upload(f, frames.back());
      }
      cuda::resize_linear_aos(cuda::as_const(in.first()), in.stride(), out.first(), out.stride(), kFrames, exact,
                              device.stream());
      const std::string what = std::string(exact ? "exact " : "fast ") + to_string(in_size) + " -> " + to_string(out_size);
      EXPECT_EQ(out.written_outside_frames(), 0u) << what << ": bytes outside the frames were written";
      for (int f = 0; f < kFrames; ++f) {
        const cuda::DeviceBuffer packed_in = device.upload(frames[static_cast<std::size_t>(f)]);
        const cuda::DeviceBuffer packed_out = device.poisoned(out_size.rgb_bytes());
        const cuda::ConstAosView from = cuda::as_const(aos(packed_in.data(), in_size));
        if (exact) {
          cuda::resize_linear_exact_naive(from, aos(packed_out.data(), out_size), device.stream());
        } else {
          cuda::resize_linear_naive(from, aos(packed_out.data(), out_size), device.stream());
        }
        EXPECT_TRUE(within(out.download(f), device.download(packed_out.data(), out_size), 0)) << what << ", frame " << f;
      }
    }
  }
}

}  // namespace
}  // namespace imgpipe::testing
