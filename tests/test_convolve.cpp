// gaussian, box, sharpen and sobel (kernels/convolve.cu) on both GPU paths against the reference, in both
// border modes, on the photographs and on sizes no tile divides. Sharpen and sobel must be exact, the blurs
// within ±1, and 2 for K = 31: the GPU paths use OpenCV's 8-bit Gaussian taps (units of 1/256), and on images
// smaller than the kernel reflection folds many rounded taps onto a few pixels, as in OpenCV itself.
#include "gpu_op_test.hpp"
#include "reference.hpp"

#include <cstddef>
#include <vector>

namespace imgpipe::testing {
namespace {

std::vector<OpCase> convolve_cases() {
  return {
      {"gaussian_3", fixed_op(Gaussian{3, 0.0, Border::reflect101}), 1},
      {"gaussian_5_sigma1", fixed_op(Gaussian{5, 1.0, Border::reflect101}), 1},
      {"gaussian_5_replicate", fixed_op(Gaussian{5, 1.0, Border::replicate}), 1},
      {"gaussian_31_sigma6", fixed_op(Gaussian{31, 6.0, Border::reflect101}), 2},
      {"gaussian_31_replicate", fixed_op(Gaussian{31, 0.0, Border::replicate}), 2},
      {"box_3", fixed_op(Box{3, Border::reflect101}), 1},
      {"box_9_replicate", fixed_op(Box{9, Border::replicate}), 1},
      {"box_31", fixed_op(Box{31, Border::reflect101}), 1},
      {"sharpen", fixed_op(Sharpen{Border::reflect101}), 0},
      {"sharpen_replicate", fixed_op(Sharpen{Border::replicate}), 0},
      {"sobel", fixed_op(Sobel{Border::reflect101}), 0},
      {"sobel_replicate", fixed_op(Sobel{Border::replicate}), 0},
  };
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuOpTest, on_both_paths_and_image_sets(convolve_cases()), gpu_op_test_name);

// Both border modes take effect: against the reference (above) and against each other, here: identical
// where no tap reaches past the frame, different somewhere along its edge.
TEST_P(GpuPathTest, BorderModesDifferOnlyAtTheEdges) {
  SKIP_WITHOUT_DEVICE();
  const Image image = testing::synthetic_image({67, 45}, 7);
  struct Pair {
    Op reflect, replicate;
    int radius, tolerance;
  };
  const std::vector<Pair> pairs = {
      {Gaussian{7, 1.5, Border::reflect101}, Gaussian{7, 1.5, Border::replicate}, 3, 1},
      {Box{5, Border::reflect101}, Box{5, Border::replicate}, 2, 1},
      {Sharpen{Border::reflect101}, Sharpen{Border::replicate}, 1, 0},
      {Sobel{Border::reflect101}, Sobel{Border::replicate}, 1, 0},
  };
  for (const auto& [reflect, replicate, r, tolerance] : pairs) {
    const Image a = run_device_chain(GetParam(), Chain{{reflect}}, image);
    const Image b = run_device_chain(GetParam(), Chain{{replicate}}, image);
    EXPECT_TRUE(within(a, reference::apply(reflect, image), tolerance)) << to_string(reflect);
    EXPECT_TRUE(within(b, reference::apply(replicate, image), tolerance)) << to_string(replicate);
    bool edges_differ = false;
    std::size_t interior_differ = 0;
    for (int y = 0; y < image.height(); ++y)
      for (int x = 0; x < image.width(); ++x)
        for (int c = 0; c < 3; ++c) {
          const bool edge = x < r || y < r || x >= image.width() - r || y >= image.height() - r;
          const bool same = a.at(x, y, c) == b.at(x, y, c);
          if (edge) edges_differ = edges_differ || !same;
          else interior_differ += !same;
        }
    EXPECT_TRUE(edges_differ) << to_string(reflect) << " and " << to_string(replicate) << " agree at the edges";
    EXPECT_EQ(interior_differ, 0u) << to_string(reflect) << " and " << to_string(replicate)
                                   << " differ inside the frame";
  }
}

INSTANTIATE_TEST_SUITE_P(BothPaths, GpuPathTest, ::testing::Values(GpuPath::naive, GpuPath::optimized),
                         [](const auto& info) { return path_name(info.param); });

}  // namespace
}  // namespace imgpipe::testing
