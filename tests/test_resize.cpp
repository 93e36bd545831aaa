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
// kernel's bytes (fast) or the exact naive kernel's (exact), no byte between rows or frames written. The last
// two, up and down, are large enough for the batched kernel on a GPU of up to 800k resident threads (two waves
// of its threads; the H200 has 270k); the others run the naive kernels, which the call takes for launches that
// small.
TEST(ResizeInterleaved, BatchesAtAnyAlignmentGiveTheNaiveKernelsBytes) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<std::pair<Size, Size>> sizes = {{{1, 1}, {1, 1}},     {{3, 7}, {1, 1}},     {{1, 9}, {5, 2}},
                                                    {{203, 117}, {135, 70}}, {{203, 117}, {407, 301}},
                                                    {{640, 360}, {427, 240}}, {{33, 65}, {33, 31}},
                                                    {{2001, 1117}, {3841, 2161}}, {{3841, 2161}, {2001, 1117}}};
  for (const bool exact : {false, true}) {
    for (const auto& [in_size, out_size] : sizes) {
      const Device device;
      const auto layout = [](Size s) {
        const std::size_t pitch = 3 * static_cast<std::size_t>(s.width) + 1;
        return std::pair{pitch, pitch * static_cast<std::size_t>(s.height) + 5};
      };
      const auto [in_pitch, in_stride] = layout(in_size);
      const auto [out_pitch, out_stride] = layout(out_size);
      constexpr int kFrames = 3;
      std::vector<Image> frames;
      const cuda::DeviceBuffer d_in = device.poisoned(1 + kFrames * in_stride);
      const cuda::DeviceBuffer d_out = device.poisoned(1 + kFrames * out_stride);
      for (int f = 0; f < kFrames; ++f) {
        frames.push_back(testing::random_image(in_size, 70u + static_cast<std::uint32_t>(f)));
        const std::size_t row = 3 * static_cast<std::size_t>(in_size.width);
        IMGPIPE_CUDA_CHECK(cudaMemcpy2DAsync(d_in.data() + 1 + f * in_stride, in_pitch, frames.back().data(), row, row,
                                             in_size.height, cudaMemcpyHostToDevice, device.stream()));
      }
      cuda::resize_linear_aos({d_in.data() + 1, extent_of(in_size), in_pitch}, in_stride,
                              {d_out.data() + 1, extent_of(out_size), out_pitch}, out_stride, kFrames, exact,
                              device.stream());
      const std::vector<std::uint8_t> all =
          device.download(d_out.data(), 1 + kFrames * out_stride, 1 + kFrames * out_stride, 1);
      std::size_t outside = 0;
      for (std::size_t i = 0; i < all.size(); ++i) {
        const std::size_t at = i - 1;
        const bool in_frame = i > 0 && at % out_stride < out_pitch * out_size.height &&
                              at % out_stride % out_pitch < 3 * static_cast<std::size_t>(out_size.width);
        if (!in_frame && all[i] != kPoison) ++outside;
      }
      const std::string what = std::string(exact ? "exact " : "fast ") + to_string(in_size) + " -> " + to_string(out_size);
      EXPECT_EQ(outside, 0u) << what << ": bytes outside the frames were written";
      for (int f = 0; f < kFrames; ++f) {
        const cuda::DeviceBuffer packed_in = device.upload(frames[static_cast<std::size_t>(f)]);
        const cuda::DeviceBuffer packed_out = device.poisoned(out_size.rgb_bytes());
        const cuda::ConstAosView from = cuda::as_const(aos(packed_in.data(), in_size));
        if (exact) {
          cuda::resize_linear_exact_naive(from, aos(packed_out.data(), out_size), device.stream());
        } else {
          cuda::resize_linear_naive(from, aos(packed_out.data(), out_size), device.stream());
        }
        const Image got = device.download(d_out.data() + 1 + f * out_stride, out_size, out_pitch);
        EXPECT_TRUE(within(got, device.download(packed_out.data(), out_size), 0)) << what << ", frame " << f;
      }
    }
  }
}

}  // namespace
}  // namespace imgpipe::testing
