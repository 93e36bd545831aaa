// The interleaved, batched filters (separable_aos, filter3x3_aos, sobel_aos in kernels/convolve.cuh, and the gray
// launches fused with them) give the bytes of the tiled plane kernels (separable_frames, filter3x3_frames,
// sobel_frames, after gray_frames and before normalize_frames where fused with those), which the op tests check
// against the reference: every tap count, both borders, photographs and sizes no tile divides, pitches and base
// addresses of every alignment, and several frames per launch, each with 64x32 tiles, with 64x16 tiles and with the
// tiles the launch picks. Outputs are poisoned first, and the bytes between rows and between frames must stay poison.
// Skips without a CUDA device.
#include "chain.hpp"
#include "convolve.cuh"
#include "cuda_check.hpp"
#include "gray.cuh"
#include "normalize.cuh"
#include "gpu_test_support.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace imgpipe::testing {
namespace {

using cuda::BorderMode;

// One frame per plane-kernel launch, as the optimized path ran these filters before: the expected bytes.
using PlaneFilter = std::function<void(const cuda::ConstFrameView&, const cuda::FrameView&, cudaStream_t)>;
// `frames` interleaved frames per launch, on tiles of the height named.
using BatchFilter =
    std::function<void(cuda::ConstAosView, std::size_t, cuda::AosView, std::size_t, int, cudaStream_t, cuda::AosTiles)>;

// The layouts every filter runs on: packed and aligned, then rows and frames misaligned in every way.
const std::vector<FrameLayout> kLayouts = {{0, 0, 0}, {1, 1, 3}, {3, 5, 1}, {2, 2, 6}};

struct Batch {
  std::vector<Image> frames;
  std::string what;
};

// `frames` frames of `size` as one upload in `layout`; the filter's output in the same layout, poisoned, on the
// tiles the launch picks and on each height; every frame compared with the plane kernel's bytes, and every
// padding byte still poison.
void expect_same_bytes(const Batch& batch, const FrameLayout& layout, const PlaneFilter& planes,
                       const BatchFilter& aos) {
  const Device device;
  const Size size = batch.frames.front().size();
  const auto frames = static_cast<int>(batch.frames.size());
  const cuda::Extent extent = extent_of(size);
  const std::size_t row = 3 * static_cast<std::size_t>(size.width);
  std::vector<Image> expected;
  for (const Image& image : batch.frames) {
    const cuda::DeviceBuffer d_in = device.upload(image);
    const cuda::DeviceBuffer d_out = device.poisoned(image.bytes());
    planes(cuda::as_frame(cuda::ConstAosView{d_in.data(), extent, row}),
           cuda::as_frame(cuda::AosView{d_out.data(), extent, row}), device.stream());
    expected.push_back(device.download(d_out.data(), size));
  }
  for (const cuda::AosTiles tiles : {cuda::AosTiles::by_launch, cuda::AosTiles::full, cuda::AosTiles::half}) {
    const std::string what = batch.what + (tiles == cuda::AosTiles::by_launch ? ", tiles by the launch"
                                           : tiles == cuda::AosTiles::full    ? ", 64x32 tiles"
                                                                              : ", 64x16 tiles");
    const FrameBatch in(device, size, frames, layout), out(device, size, frames, layout);
    for (int f = 0; f < frames; ++f) in.upload(f, batch.frames[static_cast<std::size_t>(f)]);
    aos(cuda::as_const(in.first()), in.stride(), out.first(), out.stride(), frames, device.stream(), tiles);
    EXPECT_EQ(out.written_outside_frames(), 0u) << what << ": bytes outside the frames were written";
    for (int f = 0; f < frames; ++f) {
      EXPECT_TRUE(within(out.download(f), expected[static_cast<std::size_t>(f)], 0))
          << what << ", frame " << f << ", pitch +" << layout.pitch_pad << ", offset " << layout.offset;
    }
  }
}

// The photographs one frame at a time, and odd sizes (1x1 and 3x7 among them) three frames per launch.
const std::vector<Batch>& batches() {
  static const std::vector<Batch> kBatches = [] {
    std::vector<Batch> all;
    for (const NamedImage& photo : photos()) all.push_back({{photo.image}, photo.name});
    std::uint32_t seed = 11;
    // 256x40 packed: rows 16-byte aligned, so interior tiles take the vector loads in every frame of a batch.
    for (const Size size :
         std::vector<Size>{{1, 1}, {3, 7}, {2, 1}, {63, 31}, {64, 32}, {65, 33}, {203, 117}, {256, 40}, {1000, 3}}) {
      Batch b{{}, to_string(size) + " x3"};
      for (int f = 0; f < 3; ++f) b.frames.push_back(f == 1 ? random_image(size, seed++) : synthetic_image(size, seed++));
      all.push_back(std::move(b));
    }
    return all;
  }();
  return kBatches;
}

std::string border_name(BorderMode b) { return b == BorderMode::replicate ? "replicate" : "reflect101"; }

void expect_separable_matches(const cuda::ConstantTaps& taps, const std::string& what, bool packs) {
  EXPECT_EQ(cuda::separable_aos_takes(taps), packs) << what;
  for (const BorderMode border : {BorderMode::reflect101, BorderMode::replicate}) {
    const PlaneFilter planes = [&](const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t s) {
      cuda::separable_frames(in, out, taps, border, s);
    };
    const BatchFilter aos = [&](cuda::ConstAosView in, std::size_t is, cuda::AosView out, std::size_t os, int n,
                                cudaStream_t s, cuda::AosTiles tiles) {
      cuda::separable_aos(in, is, out, os, n, taps, border, s, tiles);
    };
    for (const Batch& batch : batches()) {
      for (const FrameLayout& layout : kLayouts) {
        expect_same_bytes({batch.frames, what + " " + border_name(border) + " on " + batch.what}, layout, planes, aos);
      }
    }
  }
}

std::vector<float> fixed_point_gaussian(int ksize, double sigma) {
  std::vector<float> taps;
  for (const int tap : gaussian_fixed_point_taps(ksize, sigma)) taps.push_back(static_cast<float>(tap) / 256.f);
  return taps;
}

TEST(FilterAos, GaussianAtEveryKernelSizeGivesThePlaneKernelsBytes) {
  SKIP_WITHOUT_DEVICE();
  for (int ksize = 3; ksize <= cuda::kMaxTaps; ksize += 2) {
    const cuda::ConstantTaps taps(fixed_point_gaussian(ksize, ksize == 5 ? 1.0 : 0.0));
    expect_separable_matches(taps, "gaussian " + std::to_string(ksize), true);
  }
}

TEST(FilterAos, BoxGivesThePlaneKernelsBytes) {
  SKIP_WITHOUT_DEVICE();
  // Window sums over fewer taps than a column item's 8 rows (3, 5, 7), over more (9, 15) and over the most (31).
  for (const int ksize : {3, 5, 7, 9, 15, 31}) {
    const std::vector<float> ones(static_cast<std::size_t>(ksize), 1.f);
    const cuda::ConstantTaps taps(ones, 1.f / static_cast<float>(ksize * ksize));
    EXPECT_TRUE(taps.all_ones()) << "box " << ksize << " sums its windows by additions";
    EXPECT_NE(taps.separable_divide().multiplier, 0u) << "box " << ksize << " rounds as an integer division";
    expect_separable_matches(taps, "box " + std::to_string(ksize), true);
  }
  // Scales of the box's sums that are another integer's reciprocal, and one that is none (rounded in float).
  const std::vector<float> five(5, 1.f), three(3, 1.f);
  expect_separable_matches(cuda::ConstantTaps(five, 1.f / 20.f), "box 5 at scale 1/20", true);
  const cuda::ConstantTaps no_reciprocal(three, 0.3f);
  EXPECT_EQ(no_reciprocal.separable_divide().multiplier, 0u) << "box 3 at scale 0.3";
  expect_separable_matches(no_reciprocal, "box 3 at scale 0.3", true);
}

// Integer taps that are not all ones, at a scale other than OpenCV's Gaussian's 2^-16 (binomial taps of radius 1 to
// 3, at scale 1 / sum^2): weighed by multiply-adds in both passes and rounded by the integer division of the sum.
TEST(FilterAos, WeightedIntegerTapsGiveThePlaneKernelsBytes) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<std::vector<float>> binomials = {{1, 2, 1}, {1, 4, 6, 4, 1}, {1, 6, 15, 20, 15, 6, 1}};
  for (const std::vector<float>& weights : binomials) {
    float sum = 0;
    for (const float w : weights) sum += w;
    const cuda::ConstantTaps taps(weights, 1.f / (sum * sum));
    const std::string what = "binomial " + std::to_string(weights.size());
    EXPECT_FALSE(taps.separable_top_byte() || taps.all_ones()) << what << " takes the weighted sums";
    EXPECT_NE(taps.separable_divide().multiplier, 0u) << what << " rounds as an integer division";
    expect_separable_matches(taps, what, true);
  }
}

// Taps that are no whole 1/256 (or whose sums the 16-bit lanes cannot hold) take the plane kernel per frame.
TEST(FilterAos, TapsTheLanesCannotHoldFallBackToThePlaneKernel) {
  SKIP_WITHOUT_DEVICE();
  std::vector<float> raw;
  for (const double w : gaussian_weights(7, 1.3)) raw.push_back(static_cast<float>(w));
  expect_separable_matches(cuda::ConstantTaps(raw), "float gaussian 7", false);
  expect_separable_matches(cuda::ConstantTaps(std::vector<float>{-1.f, 3.f, -1.f}), "negative taps", false);
  expect_separable_matches(cuda::ConstantTaps(std::vector<float>(31, 9.f)), "sums past the lanes", false);
}

void expect_3x3_matches(const PlaneFilter& planes, const BatchFilter& aos, const std::string& what) {
  for (const Batch& batch : batches()) {
    for (const FrameLayout& layout : kLayouts) expect_same_bytes({batch.frames, what + " on " + batch.what}, layout, planes, aos);
  }
}

// Sharpen's cross runs as constants of the kernel, other whole taps at scale 1 clamp two 16-bit lanes at once, and
// the rest round through float: each against the plane kernel.
TEST(FilterAos, ThreeByThreeFiltersGiveThePlaneKernelsBytes) {
  SKIP_WITHOUT_DEVICE();
  struct Case {
    std::vector<float> taps;
    float scale;
    const char* name;
    bool packs;
  };
  for (const Case& c : {Case{{0, -1, 0, -1, 5, -1, 0, -1, 0}, 1.f, "sharpen", true},
                        Case{{1, 1, 1, 1, 1, 1, 1, 1, 1}, 1.f / 9.f, "mean", true},
                        Case{{-1, -2, -1, 0, 0, 0, 1, 2, 1}, 0.5f, "half sobel", true},
                        Case{{-1, -2, -1, 0, 0, 0, 1, 2, 1}, 1.f, "sobel y", true},
                        Case{{0, -1, 0, -1, 5, -1, 0, -1, 0}, 2.f, "sharpen doubled", true},
                        Case{{0.f, -0.5f, 0.f, -0.5f, 3.f, -0.5f, 0.f, -0.5f, 0.f}, 1.f, "fractional", false}}) {
    const cuda::ConstantTaps taps(c.taps, c.scale);
    EXPECT_EQ(cuda::filter3x3_aos_takes(taps), c.packs) << c.name;
    EXPECT_EQ(taps.sharpen_cross(), std::string(c.name) == "sharpen") << c.name;
    for (const BorderMode border : {BorderMode::reflect101, BorderMode::replicate}) {
      expect_3x3_matches(
          [&](const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t s) {
            cuda::filter3x3_frames(in, out, taps, border, s);
          },
          [&](cuda::ConstAosView in, std::size_t is, cuda::AosView out, std::size_t os, int n, cudaStream_t s,
              cuda::AosTiles tiles) { cuda::filter3x3_aos(in, is, out, os, n, taps, border, s, tiles); },
          std::string(c.name) + " " + border_name(border));
    }
  }
}

TEST(FilterAos, SobelGivesThePlaneKernelsBytes) {
  SKIP_WITHOUT_DEVICE();
  for (const BorderMode border : {BorderMode::reflect101, BorderMode::replicate}) {
    expect_3x3_matches(
        [&](const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t s) {
          cuda::sobel_frames(in, out, border, s);
        },
        [&](cuda::ConstAosView in, std::size_t is, cuda::AosView out, std::size_t os, int n, cudaStream_t s,
            cuda::AosTiles tiles) { cuda::sobel_aos(in, is, out, os, n, border, s, tiles); },
        "sobel " + border_name(border));
  }
}

// Gray fused into sharpen or sobel gives the bytes of the gray op and then the filter, as two launches.
TEST(FilterAos, GrayFirstGivesGrayThenTheFilter) {
  SKIP_WITHOUT_DEVICE();
  const cuda::ConstantTaps sharpen(std::vector<float>{0, -1, 0, -1, 5, -1, 0, -1, 0});
  for (const BorderMode border : {BorderMode::reflect101, BorderMode::replicate}) {
    for (const bool is_sobel : {true, false}) {
      expect_3x3_matches(
          [&](const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t s) {
            const cuda::Extent e = in.extent();
            const std::size_t row = 3 * static_cast<std::size_t>(e.width);
            const cuda::DeviceBuffer gray(row * static_cast<std::size_t>(e.height));
            const cuda::AosView gray_frame{gray.data(), e, row};
            cuda::gray_frames(in, cuda::as_frame(gray_frame), s);
            if (is_sobel) {
              cuda::sobel_frames(cuda::as_frame(cuda::as_const(gray_frame)), out, border, s);
            } else {
              cuda::filter3x3_frames(cuda::as_frame(cuda::as_const(gray_frame)), out, sharpen, border, s);
            }
            IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(s));  // before the gray frame is freed
          },
          [&](cuda::ConstAosView in, std::size_t is, cuda::AosView out, std::size_t os, int n, cudaStream_t s,
              cuda::AosTiles tiles) {
            if (is_sobel) {
              cuda::gray_sobel_aos(in, is, out, os, n, border, s, tiles);
            } else {
              cuda::gray_filter3x3_aos(in, is, out, os, n, sharpen, border, s, tiles);
            }
          },
          std::string(is_sobel ? "gray, sobel " : "gray, sharpen ") + border_name(border));
    }
  }
  const cuda::ConstantTaps fractional(std::vector<float>{0.f, -0.5f, 0.f, -0.5f, 3.f, -0.5f, 0.f, -0.5f, 0.f});
  cuda::DeviceBuffer buffer(3 * 8 * 8 * 2);
  EXPECT_THROW(cuda::gray_filter3x3_aos({buffer.data(), {8, 8}, 24}, 24 * 8, {buffer.data() + 24 * 8, {8, 8}, 24},
                                        24 * 8, 1, fractional, BorderMode::reflect101, nullptr),
               std::invalid_argument);
}

// Gray, sobel and normalize fused (one byte per pixel and its range, then the stretch) give the bytes of the three
// ops as three launches, each frame of a batch stretched by its own range.
TEST(FilterAos, GraySobelNormalizeGivesTheThreeOpsBytes) {
  SKIP_WITHOUT_DEVICE();
  cuda::NormalizeScratch reference_scratch, fused_scratch;
  for (const BorderMode border : {BorderMode::reflect101, BorderMode::replicate}) {
    expect_3x3_matches(
        [&](const cuda::ConstFrameView& in, const cuda::FrameView& out, cudaStream_t s) {
          const cuda::Extent e = in.extent();
          const std::size_t row = 3 * static_cast<std::size_t>(e.width);
          const cuda::DeviceBuffer gray(row * static_cast<std::size_t>(e.height));
          const cuda::DeviceBuffer edges(row * static_cast<std::size_t>(e.height));
          const cuda::AosView gray_frame{gray.data(), e, row}, edge_frame{edges.data(), e, row};
          cuda::gray_frames(in, cuda::as_frame(gray_frame), s);
          cuda::sobel_frames(cuda::as_frame(cuda::as_const(gray_frame)), cuda::as_frame(edge_frame), border, s);
          cuda::normalize_frames(cuda::as_frame(cuda::as_const(edge_frame)), out, reference_scratch, s);
          IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(s));  // before the frames between are freed
        },
        [&](cuda::ConstAosView in, std::size_t is, cuda::AosView out, std::size_t os, int n, cudaStream_t s,
            cuda::AosTiles tiles) {
          cuda::gray_sobel_normalize_aos(in, is, out, os, n, border, fused_scratch, s, tiles);
        },
        "gray, sobel, normalize " + border_name(border));
  }
}

// Half-height tiles below two waves of blocks, and only there.
TEST(FilterAos, HalfTilesForLaunchesShorterThanTwoWaves) {
  EXPECT_TRUE(cuda::aos_half_tiles_pay(1, 792));
  EXPECT_TRUE(cuda::aos_half_tiles_pay(1020, 792));  // one 1080p frame where 792 blocks are resident
  EXPECT_TRUE(cuda::aos_half_tiles_pay(1583, 792));
  EXPECT_FALSE(cuda::aos_half_tiles_pay(1584, 792));
  EXPECT_FALSE(cuda::aos_half_tiles_pay(16 * 1020, 792));
}

TEST(FilterAos, RefusesBatchesThatOverlapOrDifferInSize) {
  SKIP_WITHOUT_DEVICE();
  const cuda::ConstantTaps taps(fixed_point_gaussian(5, 1.0));
  cuda::DeviceBuffer buffer(3 * 8 * 8 * 4);
  const cuda::ConstAosView in{buffer.data(), {8, 8}, 24};
  const cuda::AosView out{buffer.data() + 2 * 24 * 8, {8, 8}, 24};
  const cuda::AosView smaller{buffer.data() + 2 * 24 * 8, {7, 8}, 24};
  EXPECT_THROW(cuda::separable_aos(in, 24 * 4, out, 24 * 8, 2, taps, BorderMode::reflect101, nullptr),
               std::invalid_argument);  // frames closer than a frame apart
  EXPECT_THROW(cuda::separable_aos(in, 24 * 8, smaller, 24 * 8, 1, taps, BorderMode::reflect101, nullptr),
               std::invalid_argument);
  EXPECT_THROW(cuda::sobel_aos(in, 24 * 8, out, 24 * 8, 0, BorderMode::reflect101, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace imgpipe::testing
