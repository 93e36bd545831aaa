// Exact arithmetic on both GPU paths: every op and the usual chains give OpenCV's bytes, compared byte for byte
// with opencv_exact's models (each proved memcmp-equal to OpenCV itself by test_opencv_exact, in the builds that
// have OpenCV) into poisoned outputs: on the photographs, sizes no tile divides and random bytes, at every resize
// scale class, every kernel size class and both borders; single frames, batches, and one plan over changing sizes.
#include "chain.hpp"
#include "gpu_backend.hpp"
#include "gpu_test_support.hpp"
#include "opencv_exact.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace imgpipe::testing {
namespace {

// The photographs, the odd sizes (synthetic) up to 200k pixels, and random bytes at a few odd sizes.
std::vector<NamedImage> exact_images() {
  std::vector<NamedImage> images = photos();
  std::uint32_t seed = 7;
  for (const Size size : odd_sizes()) {
    if (size.pixels() > 200000) continue;
    images.push_back({"synthetic " + to_string(size), synthetic_image(size, seed++)});
    images.push_back({"random " + to_string(size), random_image(size, seed++)});
  }
  return images;
}

class GpuExactTest : public GpuPathTest {
 protected:
  // The chain on the device with exact arithmetic equals the models, byte for byte.
  void expect_exact(const std::string& text, const NamedImage& sample) {
    const Chain chain = parse_chain(text);
    EXPECT_TRUE(within(run_device_chain(GetParam(), chain, sample.image, Arithmetic::exact),
                       opencv_exact::apply(chain, sample.image), 0))
        << path_name(GetParam()) << " path, '" << text << "' on " << describe(sample);
  }
};

TEST_P(GpuExactTest, LinearResizeAtEveryScaleClass) {
  SKIP_WITHOUT_DEVICE();
  for (const NamedImage& sample : exact_images()) {
    for (const Size out : opencv_exact::scale_classes(sample.image.size())) {
      expect_exact("resize=" + to_string(out), sample);
    }
  }
}

TEST_P(GpuExactTest, GaussianAtEveryKernelSizeSigmaAndBorder) {
  SKIP_WITHOUT_DEVICE();
  for (const NamedImage& sample : exact_images()) {
    for (const char* g : {"3", "3:0.8", "5", "5:1.0", "7", "7:2.0", "9", "11:1.7", "15:3.0", "31:6.0"}) {
      expect_exact(std::string("gaussian=") + g, sample);
      expect_exact(std::string("gaussian=") + g + ":replicate", sample);
    }
  }
}

TEST_P(GpuExactTest, BoxAtEveryKernelSizeAndBorder) {
  SKIP_WITHOUT_DEVICE();
  for (const NamedImage& sample : exact_images()) {
    for (const int k : {3, 5, 7, 9, 15, 17, 31}) {
      expect_exact("box=" + std::to_string(k), sample);
      expect_exact("box=" + std::to_string(k) + ":replicate", sample);
    }
  }
}

TEST_P(GpuExactTest, PointAndThreeByThreeOpsAndGeometry) {
  SKIP_WITHOUT_DEVICE();
  for (const NamedImage& sample : exact_images()) {
    for (const char* op : {"gray", "normalize", "sharpen", "sharpen=replicate", "sobel", "sobel=replicate",
                           "transpose", "rotate=90", "rotate=180", "rotate=270", "flip=h", "flip=v"}) {
      expect_exact(op, sample);
    }
  }
}

// Channel ranges whose stretch lands exactly on a half, where the rounding of cv::normalize shows.
TEST_P(GpuExactTest, NormalizeRoundsTiesAsOpenCv) {
  SKIP_WITHOUT_DEVICE();
  expect_exact("normalize", {"tie ranges", opencv_exact::normalize_ties()});
}

// A linear resize followed by gaussian or box, which the optimized path runs as one exact fused pass, at every
// scale class, kernel size class and border.
TEST_P(GpuExactTest, ResizeThenFilterAtEveryScaleClass) {
  SKIP_WITHOUT_DEVICE();
  for (const NamedImage& sample : exact_images()) {
    if (sample.image.size().pixels() > 100000 && sample.name.rfind("random", 0) == 0) continue;
    for (const Size out : opencv_exact::scale_classes(sample.image.size())) {
      for (const char* filter : {",gaussian=5:1.0", ",box=3:replicate", ",gaussian=31:6.0:replicate", ",box=9"}) {
        expect_exact("resize=" + to_string(out) + filter, sample);
      }
    }
  }
}

// The exact ratios (2:1 and 3:2 across, a vertical scale of k/2), where the optimized path runs a linear resize,
// alone or with a Gaussian after it, as one pass of the fused kernel in OpenCV's arithmetic; frames whose rows are
// 16-byte aligned take it, the others the general kernels.
TEST_P(GpuExactTest, ExactRatiosAloneAndWithAFilter) {
  SKIP_WITHOUT_DEVICE();
  std::vector<NamedImage> images;
  for (const Size size : {Size{1920, 1080}, Size{96, 50}, Size{102, 66}}) {
    images.push_back({"random " + to_string(size), random_image(size, 31)});
    images.push_back({"synthetic " + to_string(size), synthetic_image(size, 32)});
  }
  for (const NamedImage& sample : images) {
    const Size in = sample.image.size();
    const std::string three_halves = "resize=" + to_string(Size{in.width * 2 / 3, in.height * 2 / 3});
    const std::string half = "resize=" + to_string(Size{in.width / 2, in.height / 2});
    const std::string widened = "resize=" + to_string(Size{in.width / 2, in.height * 2});
    for (const std::string& chain :
         {three_halves, half, widened, three_halves + ",gaussian=5:1.0", half + ",gaussian=9:replicate",
          widened + ",gaussian=3", three_halves + ",gaussian=7:2.0,flip=h", half + ",transpose",
          three_halves + ",box=3"}) {
      expect_exact(chain, sample);
    }
  }
}

// The optimized path merges a stretch's transposes, rotations and flips into one at its end, past the filters and
// point ops (merge_reorientations); a flip between a resize and its Gaussian then lets them fuse.
TEST_P(GpuExactTest, ReorientationsMergedPastFiltersAndPointOps) {
  SKIP_WITHOUT_DEVICE();
  for (const NamedImage& sample : exact_images()) {
    const Size in = sample.image.size();
    const Size two_thirds{std::max(1, in.width * 2 / 3), std::max(1, in.height * 2 / 3)};
    const std::string three_halves = "resize=" + to_string(two_thirds);
    for (const std::string& chain :
         {std::string("rotate=90,flip=h,sharpen"), std::string("rotate=90,flip=v,sobel=replicate,gray"),
          std::string("flip=h,box=5,normalize,flip=h"), std::string("transpose,gaussian=7:2.0,rotate=90,flip=v"),
          three_halves + ",flip=v,gaussian=5:1.0,rotate=180", "rotate=270," + three_halves + ",transpose,box=3",
          std::string("rotate=270,sobel=replicate")}) {
      expect_exact(chain, sample);
    }
  }
}

// Gray, normalize, the flips, rotate180 and the tiled filters read the interleaved input themselves where they
// come first in the optimized path's chain, and write the interleaved output where they come last (the
// pointwise ops in words where rows are 4-byte aligned, byte by byte elsewhere): widths that are and are not
// multiples of 4, the ops alone, first, last and both, next to ops that need planes; gray, sobel and normalize
// as one stage between other ops; and a sharpen or sobel with a turn before or after it, alone and before a
// resize.
TEST_P(GpuExactTest, OpsAtTheChainsEndsReadAndWriteTheInterleavedFrame) {
  SKIP_WITHOUT_DEVICE();
  std::uint32_t seed = 50;
  for (const Size size : {Size{96, 50}, Size{97, 33}, Size{1920, 1080}, Size{4, 1}, Size{1, 4}, Size{5, 3}}) {
    const NamedImage sample{"random " + to_string(size), random_image(size, seed++)};
    for (const char* chain : {"gray", "normalize", "flip=h", "flip=v", "rotate=180", "gray,flip=h", "flip=v,normalize",
                              "normalize,transpose", "transpose,gray", "rotate=180,gaussian=5:1.0,flip=h",
                              "gray,sobel,normalize", "sharpen,rotate=180", "gaussian=7:2.0,flip=h",
                              "transpose,sobel", "box=3:replicate,transpose", "sharpen=replicate,gray",
                              "gray,sharpen", "gray,sobel=replicate,transpose", "flip=h,gray,sharpen=replicate",
                              "flip=h,gray,sobel,normalize,transpose", "box=3,gray,sobel,normalize",
                              "rotate=90,sharpen", "sobel=replicate,rotate=270", "transpose,sharpen,resize=40x30"}) {
      expect_exact(chain, sample);
    }
  }
}

// The same at input and output addresses that are not 4-byte aligned (a view into a larger array): byte by byte.
TEST_P(GpuExactTest, InterleavedEndsAtUnalignedAddresses) {
  SKIP_WITHOUT_DEVICE();
  const Device device;
  const Image image = random_image({96, 50}, 8);
  for (const char* text : {"gray", "normalize", "flip=h", "rotate=180,gray", "gaussian=5:1.0", "sobel,sharpen"}) {
    const Chain chain = parse_chain(text);
    DeviceChain device_chain(GetParam(), chain, Arithmetic::exact);
    const Size out_size = output_size(chain, image.size());
    const cuda::DeviceBuffer in = device.upload(image, 3 * static_cast<std::size_t>(image.width()), 1);
    const cuda::DeviceBuffer out = device.poisoned(out_size.rgb_bytes() + 3);
    device_chain.run(in.data() + 1, image.size(), out.data() + 3, device.stream());
    EXPECT_TRUE(within(device.download(out.data() + 3, out_size), opencv_exact::apply(chain, image), 0))
        << path_name(GetParam()) << " path, '" << text << "'";
  }
}

// The chains users run, the headline one first.
TEST_P(GpuExactTest, Chains) {
  SKIP_WITHOUT_DEVICE();
  for (const NamedImage& sample : exact_images()) {
    const Size in = sample.image.size();
    const auto dims = [](int w, int h) { return to_string(Size{std::max(1, w), std::max(1, h)}); };
    for (const std::string& chain :
         {std::string("resize=1280x720,gaussian=5:1.0"), "resize=" + dims(in.width * 2 / 3, in.height / 2) + ",box=3",
          "resize=" + dims(in.width / 3 + 1, in.height * 3 / 2) + ",gaussian=7:2.0:replicate,transpose",
          std::string("gray,sobel,normalize"), std::string("rotate=90,flip=h,sharpen"),
          "gaussian=9:2.0,transpose,resize=" + dims(in.height / 3, in.width * 5 / 4) + ":nearest"}) {
      expect_exact(chain, sample);
    }
  }
}

// run_batch gives the same bytes as the models frame by frame, and one plan keeps them across changing sizes.
TEST_P(GpuExactTest, BatchesAndChangingSizes) {
  SKIP_WITHOUT_DEVICE();
  const Device device;
  const Chain chain = parse_chain("resize=301x207,gaussian=5:1.0");
  DeviceChain device_chain(GetParam(), chain, Arithmetic::exact);
  EXPECT_EQ(device_chain.arithmetic(), Arithmetic::exact);
  const Size in_size{641, 479};
  constexpr int kFrames = 5;
  Image frames({in_size.width, in_size.height * kFrames});  // frame f at rows f * height, packed
  std::vector<Image> inputs;
  for (int f = 0; f < kFrames; ++f) {
    inputs.push_back(random_image(in_size, 100 + f));
    std::copy_n(inputs.back().data(), in_size.rgb_bytes(), frames.data() + f * in_size.rgb_bytes());
  }
  const Size out_size = output_size(chain, in_size);
  const cuda::DeviceBuffer d_in = device.upload(frames);
  const cuda::DeviceBuffer d_out = device.poisoned(out_size.rgb_bytes() * kFrames);
  device_chain.run_batch(d_in.data(), in_size, kFrames, d_out.data(), device.stream());
  const Image out = device.download(d_out.data(), {out_size.width, out_size.height * kFrames});
  for (int f = 0; f < kFrames; ++f) {
    Image frame(out_size);
    std::copy_n(out.data() + f * out_size.rgb_bytes(), out_size.rgb_bytes(), frame.data());
    EXPECT_TRUE(within(frame, opencv_exact::apply(chain, inputs[f]), 0)) << "frame " << f;
  }
  for (const Size size : {Size{97, 1001}, Size{1920, 1080}, Size{33, 17}}) {
    const Image image = random_image(size, 7);
    const Size resized = output_size(chain, size);
    const cuda::DeviceBuffer in = device.upload(image);
    const cuda::DeviceBuffer result = device.poisoned(resized.rgb_bytes());
    device_chain.run(in.data(), size, result.data(), device.stream());
    EXPECT_TRUE(within(device.download(result.data(), resized), opencv_exact::apply(chain, image), 0))
        << to_string(size);
  }
}

// 8K frames: every op alone and a chain, on a 7680x4320 frame and on 7681x4321 (rows of 23043 bytes, no row after
// the first word-aligned), one frame per launch and two per batch, against the models: about 100 MB a frame, and
// grids of many waves for every kernel.
TEST_P(GpuExactTest, EveryOpOn8KFrames) {
  SKIP_WITHOUT_DEVICE();
  const Device device;
  for (const Size size : {Size{7680, 4320}, Size{7681, 4321}}) {
    const Image image = synthetic_image(size, 88);
    Image pair({size.width, size.height * 2});  // the frame twice, packed
    std::copy_n(image.data(), size.rgb_bytes(), pair.data());
    std::copy_n(image.data(), size.rgb_bytes(), pair.data() + size.rgb_bytes());
    const cuda::DeviceBuffer d_in = device.upload(pair);
    for (const char* text :
         {"resize=3840x2160", "resize=5000x2999", "gaussian=5:1.0", "box=5:replicate", "sharpen", "sobel", "flip=h",
          "rotate=180", "transpose", "rotate=90", "gray", "normalize", "gray,sobel,normalize"}) {
      const Chain chain = parse_chain(text);
      const Size out_size = output_size(chain, size);
      const Image expected = opencv_exact::apply(chain, image);
      DeviceChain device_chain(GetParam(), chain, Arithmetic::exact);
      const cuda::DeviceBuffer one = device.poisoned(out_size.rgb_bytes());
      device_chain.run(d_in.data(), size, one.data(), device.stream());
      EXPECT_TRUE(within(device.download(one.data(), out_size), expected, 0)) << text << " on " << to_string(size);
      const cuda::DeviceBuffer two = device.poisoned(2 * out_size.rgb_bytes());
      device_chain.run_batch(d_in.data(), size, 2, two.data(), device.stream());
      for (int f = 0; f < 2; ++f) {
        EXPECT_TRUE(within(device.download(two.data() + f * out_size.rgb_bytes(), out_size), expected, 0))
            << text << " on " << to_string(size) << ", frame " << f << " of a batch of 2";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothPaths, GpuExactTest, ::testing::Values(GpuPath::naive, GpuPath::optimized),
                         [](const auto& info) { return path_name(info.param); });

}  // namespace
}  // namespace imgpipe::testing
