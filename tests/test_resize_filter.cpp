// The fused resize + filter kernel (resize_filter_aos) against the reference's resize followed by its filter
// (two ops, the resized image rounded to 8 bits in between): photographs and sizes no tile divides, down- and
// upscales up to 5x, both borders, K from 1 to 31; batched launches equal single ones byte for byte. Outputs and
// their row padding are poisoned before every run, so a value nobody wrote (or one written out of place)
// fails. Within +-1 per 8-bit value. Nothing here measures speed.
#include "resize_filter.cuh"

#include "chain.hpp"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "opencv_exact.hpp"
#include "reference.hpp"
#include "skip_without_device.hpp"
#include "test_images.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace imgpipe {
namespace {

constexpr std::uint8_t kPoison = 0xA5;

// A filter as the chain spells it, and the taps and border the kernel gets for it.
struct Filter {
  Op op;
  std::vector<float> taps;
  cuda::BorderMode border;
};

cuda::BorderMode mode_of(Border b) {
  return b == Border::replicate ? cuda::BorderMode::replicate : cuda::BorderMode::reflect101;
}

Filter gaussian(int ksize, double sigma, Border border) {
  Filter f{Gaussian{ksize, sigma, border}, {}, mode_of(border)};
  for (double w : gaussian_weights(ksize, sigma)) f.taps.push_back(static_cast<float>(w));
  return f;
}

Filter box(int ksize, Border border) {
  return {Box{ksize, border}, std::vector<float>(ksize, 1.f / static_cast<float>(ksize)), mode_of(border)};
}

Image expected(const Image& in, Size out, const Filter& f) { return reference::apply(Chain{{Resize{out}, f.op}}, in); }

std::string describe(Size in, Size out, const Filter& f) {
  return to_string(in) + " -> " + to_string(out) + ", " + to_string(f.op);
}

// Every value of `actual` within 1 of `expected`; on failure how many are not, and the first one.
::testing::AssertionResult within_one(const Image& actual, const Image& expected) {
  if (actual.size() != expected.size()) return ::testing::AssertionFailure() << "size differs";
  std::size_t bad = 0, first = 0;
  int worst = 0;
  for (std::size_t i = 0; i < actual.bytes(); ++i) {
    const int d = std::abs(actual.data()[i] - expected.data()[i]);
    if (d > 1 && bad++ == 0) first = i;
    worst = std::max(worst, d);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const std::size_t pixel = first / 3;
  return ::testing::AssertionFailure()
         << bad << " of " << actual.bytes() << " values off by more than 1 (worst " << worst << "); first at x="
         << pixel % actual.width() << " y=" << pixel / actual.width() << " c=" << first % 3 << ": got "
         << int(actual.data()[first]) << ", expected " << int(expected.data()[first])
         << (actual.data()[first] == kPoison ? " (the poison: never written?)" : "");
}

// The same size and the same bytes; on failure the first byte that differs.
::testing::AssertionResult same_bytes(const Image& actual, const Image& expected) {
  if (actual.size() != expected.size()) return ::testing::AssertionFailure() << "size differs";
  const auto [a, e] = std::mismatch(actual.data(), actual.data() + actual.bytes(), expected.data());
  if (a == actual.data() + actual.bytes()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "byte " << (a - actual.data()) << " of " << actual.bytes() << ": got "
                                       << int(*a) << ", expected " << int(*e);
}

// `frames` frames of one size on the device, rows `pitch` bytes apart, frames `stride` bytes apart.
struct Layout {
  Size size;
  std::size_t pitch = 0;
  std::size_t stride = 0;
  int frames = 1;

  static Layout packed(Size s, std::size_t row_padding = 0, std::size_t frame_padding = 0, int frames = 1) {
    const std::size_t pitch = 3 * static_cast<std::size_t>(s.width) + row_padding;
    return {s, pitch, pitch * static_cast<std::size_t>(s.height) + frame_padding, frames};
  }
  std::size_t bytes() const { return stride * static_cast<std::size_t>(frames); }
  std::size_t row_bytes() const { return 3 * static_cast<std::size_t>(size.width); }
};

// Test traffic on one stream, in issue order.
class Device {
 public:
  Device() : stream_(cuda::Stream::create()) {}
  cudaStream_t stream() const { return stream_.get(); }

  // Every byte poisoned, then `images[f]` into frame f.
  cuda::DeviceBuffer upload(const std::vector<Image>& images, const Layout& layout) const {
    cuda::DeviceBuffer buffer = poisoned(layout);
    for (std::size_t f = 0; f < images.size(); ++f) {
      IMGPIPE_CUDA_CHECK(cudaMemcpy2DAsync(buffer.data() + f * layout.stride, layout.pitch, images[f].data(),
                                           layout.row_bytes(), layout.row_bytes(), layout.size.height,
                                           cudaMemcpyHostToDevice, stream()));
    }
    return buffer;
  }
  cuda::DeviceBuffer poisoned(const Layout& layout) const {
    cuda::DeviceBuffer buffer(layout.bytes());
    IMGPIPE_CUDA_CHECK(cudaMemsetAsync(buffer.data(), kPoison, layout.bytes(), stream()));
    return buffer;
  }
  // All frames back, and a failure if a byte outside their rows (row or frame padding) lost its poison.
  std::vector<Image> download(const cuda::DeviceBuffer& buffer, const Layout& layout) const {
    std::vector<std::uint8_t> all(layout.bytes());
    IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(all.data(), buffer.data(), all.size(), cudaMemcpyDeviceToHost, stream()));
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream()));
    std::vector<Image> images;
    std::size_t clobbered = 0;
    for (int f = 0; f < layout.frames; ++f) {
      Image image(layout.size);
      const std::uint8_t* frame = all.data() + static_cast<std::size_t>(f) * layout.stride;
      for (std::size_t i = 0; i < layout.stride; ++i) {
        const std::size_t y = i / layout.pitch, x = i % layout.pitch;
        if (y < static_cast<std::size_t>(layout.size.height) && x < layout.row_bytes()) {
          image.data()[y * layout.row_bytes() + x] = frame[i];
        } else if (frame[i] != kPoison) {
          ++clobbered;
        }
      }
      images.push_back(std::move(image));
    }
    EXPECT_EQ(clobbered, 0u) << "bytes written outside the output rows";
    return images;
  }

 private:
  cuda::Stream stream_;
};

cuda::Extent extent_of(Size s) { return {s.width, s.height}; }

// The frames uploaded into poisoned device memory laid out as `in_layout`, `launch(first_in, first_out, stream)`,
// and the output frames back (with the check that nothing outside them was written).
using Launch = std::function<void(cuda::ConstAosView, cuda::AosView, cudaStream_t)>;
std::vector<Image> run_on_device(const std::vector<Image>& in, const Layout& in_layout, const Layout& out_layout,
                                 const Launch& launch) {
  const Device device;
  const cuda::DeviceBuffer d_in = device.upload(in, in_layout);
  const cuda::DeviceBuffer d_out = device.poisoned(out_layout);
  launch({d_in.data(), extent_of(in_layout.size), in_layout.pitch},
         {d_out.data(), extent_of(out_layout.size), out_layout.pitch}, device.stream());
  return device.download(d_out, out_layout);
}

// All frames through one batched launch (one frame: the single-frame entry point) of resize_filter_aos.
std::vector<Image> run_fused(const std::vector<Image>& in, const Layout& in_layout, const Layout& out_layout,
                             const cuda::ResizeFilterTaps& taps, cuda::BorderMode border) {
  return run_on_device(in, in_layout, out_layout, [&](cuda::ConstAosView first_in, cuda::AosView first_out,
                                                      cudaStream_t stream) {
    if (in_layout.frames == 1) {
      cuda::resize_filter_aos(first_in, first_out, taps, border, stream);
    } else {
      cuda::resize_filter_aos_batch(first_in, in_layout.stride, first_out, out_layout.stride, in_layout.frames, taps,
                                    border, stream);
    }
  });
}

// One launch of resize_filter_aos (batched for several frames) with taps uploaded for this filter.
std::vector<Image> run_filter(const std::vector<Image>& in, const Layout& in_layout, const Layout& out_layout,
                              const Filter& f) {
  const cuda::ResizeFilterTaps taps(f.taps);
  return run_fused(in, in_layout, out_layout, taps, f.border);
}

void check(const Image& in, Size out, const Filter& f) {
  SCOPED_TRACE(describe(in.size(), out, f));
  EXPECT_TRUE(within_one(run_filter({in}, Layout::packed(in.size()), Layout::packed(out), f).front(),
                         expected(in, out, f)));
}

Size scaled(Size s, int wn, int wd, int hn, int hd) {
  return {std::max(1, s.width * wn / wd), std::max(1, s.height * hn / hd)};
}

// ---------------------------------------------------------------------------------------------- tests

TEST(ResizeFilter, PhotosDownscaledByAThirdGaussian5) {
  SKIP_WITHOUT_DEVICE();
  for (const auto& photo : testing::photos()) {
    SCOPED_TRACE(photo.name);
    check(photo.image, scaled(photo.image.size(), 2, 3, 2, 3), gaussian(5, 1.0, Border::reflect101));
    check(photo.image, scaled(photo.image.size(), 1, 2, 1, 2), gaussian(5, 1.0, Border::replicate));
  }
}

TEST(ResizeFilter, PhotosDownscaledUpTo5x) {
  SKIP_WITHOUT_DEVICE();
  for (const auto& photo : testing::photos()) {
    SCOPED_TRACE(photo.name);
    check(photo.image, scaled(photo.image.size(), 1, 3, 1, 3), gaussian(7, 0.0, Border::reflect101));
    check(photo.image, scaled(photo.image.size(), 1, 4, 1, 4), box(5, Border::replicate));
    check(photo.image, scaled(photo.image.size(), 1, 5, 2, 9), gaussian(31, 0.0, Border::reflect101));
  }
}

TEST(ResizeFilter, PhotosUpscaled) {
  SKIP_WITHOUT_DEVICE();
  for (const auto& photo : testing::photos()) {
    SCOPED_TRACE(photo.name);
    check(photo.image, scaled(photo.image.size(), 3, 2, 5, 4), box(3, Border::replicate));
    check(photo.image, scaled(photo.image.size(), 2, 1, 2, 1), gaussian(9, 2.0, Border::reflect101));
  }
}

// The benchmark's frames: 1080p -> 720p and 2160p -> 1080p with gaussian=5:1.0.
TEST(ResizeFilter, BenchmarkSizes) {
  SKIP_WITHOUT_DEVICE();
  check(testing::synthetic_image({1920, 1080}, 7), {1280, 720}, gaussian(5, 1.0, Border::reflect101));
  check(testing::synthetic_image({3840, 2160}, 8), {1920, 1080}, gaussian(5, 1.0, Border::reflect101));
}

TEST(ResizeFilter, OddSizesInAndOut) {
  SKIP_WITHOUT_DEVICE();
  std::uint32_t seed = 1;
  const Image large = testing::synthetic_image({257, 199}, 99);
  for (Size s : testing::odd_sizes()) {
    const Image in = testing::synthetic_image(s, seed++);
    for (const Filter& f : {gaussian(3, 0.0, Border::reflect101), box(31, Border::replicate),
                            gaussian(31, 0.0, Border::reflect101)}) {
      check(in, {s.width * 2 + 1, s.height * 3 + 2}, f);  // up
      check(in, s, f);                                     // same size: resize is a copy
      check(in, scaled(s, 1, 3, 1, 2), f);                 // down
      check(large, s, f);                                  // down to an odd size
    }
  }
}

class ResizeFilterKsize : public ::testing::TestWithParam<int> {};

TEST_P(ResizeFilterKsize, EveryRadius) {
  SKIP_WITHOUT_DEVICE();
  const int k = GetParam();
  const Image in = testing::synthetic_image({300, 211}, static_cast<std::uint32_t>(k));
  check(in, {211, 139}, gaussian(k, 0.0, Border::reflect101));
  check(in, {211, 139}, box(k, Border::replicate));
  check(in, {347, 250}, gaussian(k, 1.5, Border::replicate));
}

INSTANTIATE_TEST_SUITE_P(OddK, ResizeFilterKsize, ::testing::Range(3, 32, 2),
                         [](const auto& info) { return "K" + std::to_string(info.param); });

// Very wide downscales stage the interpolated rows in several passes (one row at a time at 80x).
TEST(ResizeFilter, WideDownscalesStageRowsInPasses) {
  SKIP_WITHOUT_DEVICE();
  check(testing::synthetic_image({4000, 60}, 21), {50, 30}, gaussian(5, 1.0, Border::reflect101));
  check(testing::synthetic_image({3000, 40}, 22), {100, 20}, box(31, Border::replicate));
}

// Two 1080p -> 720p frames are a grid of a few waves (1,040 blocks). Where fewer blocks per SM take as many
// waves, the launch asks for more shared memory than it uses, and must compute the same images. Which way it goes
// depends on the device; on the H200 (132 SMs, 6 blocks per SM batched) both frames take 2 waves at 6, 5 or 4
// blocks per SM, so they run at 4.
TEST(ResizeFilter, AShortGridOfFewerBlocksPerSmComputesTheSame) {
  SKIP_WITHOUT_DEVICE();
  constexpr int kFrames = 2;
  const Size in_size{1920, 1080}, out_size{1280, 720};
  const cuda::ResizeFilterLaunch two = cuda::resize_filter_launch(extent_of(in_size), extent_of(out_size), 5, kFrames);
  const cuda::ResizeFilterLaunch batch = cuda::resize_filter_launch(extent_of(in_size), extent_of(out_size), 5, 16);
  std::cout << "blocks per SM: " << two.blocks_per_sm << " for " << kFrames << " frames (" << two.shared_bytes
            << " B), " << batch.blocks_per_sm << " for 16 (" << batch.shared_bytes << " B)\n";
  EXPECT_LE(two.blocks_per_sm, batch.blocks_per_sm);
  EXPECT_EQ(two.blocks_per_sm < batch.blocks_per_sm, two.shared_bytes > batch.shared_bytes);
  std::vector<Image> frames;
  for (int f = 0; f < kFrames; ++f) frames.push_back(testing::synthetic_image(in_size, 23u + f));
  const Filter f = gaussian(5, 1.0, Border::reflect101);
  const std::vector<Image> out = run_filter(frames, Layout::packed(in_size, 0, 0, kFrames),
                                            Layout::packed(out_size, 0, 0, kFrames), f);
  ASSERT_EQ(out.size(), frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    EXPECT_TRUE(within_one(out[i], expected(frames[i], out_size, f)));
  }
}

// Launches start while the previous kernel of their stream finishes (programmatic dependent launch) and must
// still see stream order. Three launches queued at once, each a hazard that a missing wait would break: B reads
// the frame that A's last blocks write (read after write), and C overwrites that frame while B may still read it
// (write after read). Each must give the bytes it gives alone. On the H200, a build without the wait whose
// blocks also triggered their dependents at block start failed here in 3 runs of 3.
TEST(ResizeFilter, BackToBackLaunchesKeepStreamOrder) {
  SKIP_WITHOUT_DEVICE();
  constexpr int kFrames = 8;  // A: 4,160 blocks, several waves
  const Size big{1920, 1080}, mid{1280, 720}, small{640, 360};
  const Layout big_frames = Layout::packed(big, 0, 0, kFrames), mid_frames = Layout::packed(mid, 0, 0, kFrames);
  const Layout big_one = Layout::packed(big), mid_one = Layout::packed(mid), small_one = Layout::packed(small);
  std::vector<Image> sources;
  for (int f = 0; f < kFrames; ++f) sources.push_back(testing::synthetic_image(big, 60u + f));
  const Image other = testing::synthetic_image(big, 70);
  const Filter f = gaussian(5, 1.0, Border::reflect101);
  const cuda::ResizeFilterTaps taps(f.taps);
  const std::size_t last = (kFrames - 1) * mid_frames.stride;

  // Alone, each launch synchronised before the next.
  const std::vector<Image> a_alone = run_fused(sources, big_frames, mid_frames, taps, f.border);
  const Image b_alone = run_fused({a_alone.back()}, mid_one, small_one, taps, f.border).front();
  const Image c_alone = run_fused({other}, big_one, mid_one, taps, f.border).front();

  const Device device;
  const cuda::DeviceBuffer a_in = device.upload(sources, big_frames);
  const cuda::DeviceBuffer c_in = device.upload({other}, big_one);
  const cuda::DeviceBuffer a_out = device.poisoned(mid_frames);
  const cuda::DeviceBuffer b_out = device.poisoned(small_one);
  IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(device.stream()));
  cuda::resize_filter_aos_batch({a_in.data(), extent_of(big), big_frames.pitch}, big_frames.stride,
                                {a_out.data(), extent_of(mid), mid_frames.pitch}, mid_frames.stride, kFrames, taps,
                                f.border, device.stream());
  cuda::resize_filter_aos({a_out.data() + last, extent_of(mid), mid_frames.pitch},
                          {b_out.data(), extent_of(small), small_one.pitch}, taps, f.border, device.stream());
  cuda::resize_filter_aos({c_in.data(), extent_of(big), big_one.pitch},
                          {a_out.data() + last, extent_of(mid), mid_frames.pitch}, taps, f.border, device.stream());
  const std::vector<Image> a_then_c = device.download(a_out, mid_frames);
  const Image b = device.download(b_out, small_one).front();

  EXPECT_TRUE(same_bytes(b, b_alone)) << "B did not read what A wrote";
  EXPECT_TRUE(same_bytes(a_then_c.back(), c_alone)) << "C's frame is not C's";
  for (int i = 0; i + 1 < kFrames; ++i) EXPECT_TRUE(same_bytes(a_then_c[i], a_alone[i])) << "frame " << i;
}

// One tap is the plain resize. It is taken as 1 (the kernel skips the filter): a lone tap 1e-3 under 1, which the row
// and column passes would apply twice, taking bytes near 255 down a level, gives the same bytes as a tap of 1.
TEST(ResizeFilter, SingleTapIsThePlainResize) {
  SKIP_WITHOUT_DEVICE();
  const Image in = testing::synthetic_image({301, 177}, 5);
  const Filter one_tap{Gaussian{1, 0.0, Border::reflect101}, {1.f}, cuda::BorderMode::reflect101};
  const Filter near_one_tap{Gaussian{1, 0.0, Border::reflect101}, {0.999f}, cuda::BorderMode::reflect101};
  for (Size out : {Size{200, 118}, Size{451, 300}}) {
    SCOPED_TRACE(to_string(out));
    const Image fused = run_filter({in}, Layout::packed(in.size()), Layout::packed(out), one_tap).front();
    EXPECT_TRUE(within_one(fused, reference::apply(Resize{out}, in)));
    EXPECT_TRUE(same_bytes(run_filter({in}, Layout::packed(in.size()), Layout::packed(out), near_one_tap).front(),
                           fused));
  }
}

TEST(ResizeFilter, BatchedEqualsSingle) {
  SKIP_WITHOUT_DEVICE();
  constexpr int kFrames = 5;
  const Size in_size{333, 222}, out_size{250, 170};
  std::vector<Image> frames;
  for (int f = 0; f < kFrames; ++f) frames.push_back(testing::synthetic_image(in_size, 40u + f));
  const Filter f = gaussian(5, 1.0, Border::reflect101);
  // Padded rows and frames, so frame f really starts at f * stride.
  const std::vector<Image> batched = run_filter(frames, Layout::packed(in_size, 16, 48, kFrames),
                                                Layout::packed(out_size, 32, 80, kFrames), f);
  ASSERT_EQ(batched.size(), static_cast<std::size_t>(kFrames));
  for (int i = 0; i < kFrames; ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    const Image single =
        run_filter({frames[i]}, Layout::packed(in_size), Layout::packed(out_size), f).front();
    EXPECT_EQ(batched[i].bytes(), single.bytes());
    EXPECT_TRUE(same_bytes(batched[i], single));
    EXPECT_TRUE(within_one(single, expected(frames[i], out_size, f)));
  }
}

// Pitches that break 16-byte alignment take the byte-wise paths; they must compute the same bytes.
TEST(ResizeFilter, UnalignedPitchesGiveTheSameBytes) {
  SKIP_WITHOUT_DEVICE();
  const Image in = testing::synthetic_image({640, 360}, 11);
  const Size out{448, 252};
  const Filter f = gaussian(5, 1.0, Border::replicate);
  const Image aligned = run_filter({in}, Layout::packed(in.size()), Layout::packed(out), f).front();
  const Image unaligned = run_filter({in}, Layout::packed(in.size(), 1), Layout::packed(out, 5), f).front();
  EXPECT_TRUE(same_bytes(unaligned, aligned));
  EXPECT_TRUE(within_one(aligned, expected(in, out, f)));
}

// The top-left width x height of an image.
Image crop(const Image& image, Size size) {
  Image cropped(size);
  for (int y = 0; y < size.height; ++y) {
    std::copy_n(image.data() + 3 * static_cast<std::size_t>(y) * image.width(), 3 * size.width,
                cropped.data() + 3 * static_cast<std::size_t>(y) * size.width);
  }
  return cropped;
}

// Ratios with a path of their own (2:1 or 3:2 across, the vertical scale k/2 up to 2, K up to 9, rows 8-byte
// aligned) must give the general path's bytes, which an input pitch that is not even 2-byte aligned selects.
// Photos and odd sizes (one column, tiles cut by the frame's edge, 4097 wide), every radius of those paths and
// one past them.
TEST(ResizeFilter, ExactRatiosGiveTheGeneralPathsBytes) {
  SKIP_WITHOUT_DEVICE();
  std::vector<std::pair<Image, Size>> cases;
  for (const auto& photo : testing::photos()) {
    const Size by_two{photo.image.width() / 2, photo.image.height() / 2};
    const Size by_three{photo.image.width() / 3, photo.image.height() / 3};
    cases.emplace_back(crop(photo.image, {2 * by_two.width, 2 * by_two.height}), by_two);
    cases.emplace_back(crop(photo.image, {3 * by_three.width, 3 * by_three.height}),
                       Size{2 * by_three.width, 2 * by_three.height});
  }
  std::uint32_t seed = 60;
  const std::vector<std::pair<Size, Size>> sizes{
      {{2, 2}, {1, 1}},         {{6, 1}, {3, 1}},         {{2, 97}, {1, 97}},       {{226, 24}, {113, 12}},
      {{8194, 3}, {4097, 3}},   {{66, 31}, {33, 31}},     {{518, 131}, {259, 262}}, {{518, 393}, {259, 262}},
      {{3, 3}, {2, 2}},         {{3, 1}, {2, 1}},         {{3, 97}, {2, 97}},       {{339, 18}, {226, 12}},
      {{6147, 3}, {4098, 3}},   {{195, 131}, {130, 262}}, {{201, 9}, {134, 6}}};
  for (const auto& [in, out] : sizes) cases.emplace_back(testing::synthetic_image(in, seed++), out);
  for (const auto& [in, out] : cases) {
    for (int k = 1; k <= 11; k += 2) {
      const Filter f = k % 4 == 1 ? gaussian(k, 0.0, Border::reflect101) : box(k, Border::replicate);
      SCOPED_TRACE(describe(in.size(), out, f));
      EXPECT_EQ(cuda::resize_filter_launch(extent_of(in.size()), extent_of(out), k, 1).exact_ratio, k <= 9);
      const Image exact = run_filter({in}, Layout::packed(in.size()), Layout::packed(out), f).front();
      const Layout odd_pitch = Layout::packed(in.size(), in.width() % 2 == 0 ? 1 : 2);
      const Image general = run_filter({in}, odd_pitch, Layout::packed(out), f).front();
      EXPECT_TRUE(same_bytes(exact, general));
      EXPECT_TRUE(within_one(exact, expected(in, out, f)));
    }
  }
}

// OpenCV's 8-bit Gaussian taps, in the filter's form for the opencv arithmetic.
Filter opencv_gaussian(int ksize, double sigma, Border border) {
  Filter f{Gaussian{ksize, sigma, border}, {}, mode_of(border)};
  for (int tap : gaussian_fixed_point_taps(ksize, sigma)) f.taps.push_back(static_cast<float>(tap) / 256.f);
  return f;
}

// Rows padded to 16 bytes, which the opencv arithmetic needs.
Layout aligned_rows(Size s, int frames = 1) {
  return Layout::packed(s, (16 - 3 * static_cast<std::size_t>(s.width) % 16) % 16, 0, frames);
}

// With OpenCV's arithmetic the exact-ratio path gives OpenCV's bytes: cv::resize (INTER_LINEAR) then
// cv::GaussianBlur, as opencv_exact models them (test_opencv_exact proves the models against OpenCV). Photos,
// random bytes and sizes no tile divides, at 2:1 and 3:2 across with every vertical scale the path takes, every
// radius of the path, both borders; one frame, and a batch.
TEST(ResizeFilter, OpenCvArithmeticGivesOpenCvsBytesAtTheExactRatios) {
  SKIP_WITHOUT_DEVICE();
  std::vector<std::pair<Image, Size>> cases;
  for (const auto& photo : testing::photos()) {
    const Size by_two{photo.image.width() / 2, photo.image.height() / 2};
    const Size by_three{photo.image.width() / 3, photo.image.height() / 3};
    cases.emplace_back(crop(photo.image, {2 * by_two.width, 2 * by_two.height}), by_two);
    cases.emplace_back(crop(photo.image, {3 * by_three.width, 3 * by_three.height}),
                       Size{2 * by_three.width, 2 * by_three.height});
    cases.emplace_back(crop(photo.image, {2 * by_two.width, by_two.height}), Size{by_two.width, 2 * by_two.height});
  }
  std::uint32_t seed = 90;
  const std::vector<std::pair<Size, Size>> sizes{
      {{2, 2}, {1, 1}},         {{6, 1}, {3, 1}},         {{2, 97}, {1, 97}},        {{226, 24}, {113, 12}},
      {{66, 31}, {33, 31}},     {{518, 131}, {259, 262}}, {{518, 393}, {259, 262}},  {{3, 3}, {2, 2}},
      {{3, 97}, {2, 97}},       {{339, 18}, {226, 12}},   {{195, 131}, {130, 262}},  {{201, 9}, {134, 6}},
      {{1920, 1080}, {1280, 720}}, {{1920, 1080}, {960, 540}}, {{1920, 1080}, {1280, 1080}}, {{1920, 540}, {960, 1080}}};
  for (const auto& [in, out] : sizes) {
    cases.emplace_back(testing::synthetic_image(in, seed++), out);
    if (in.pixels() < 100000) cases.emplace_back(testing::random_image(in, seed++), out);
  }
  for (const auto& [in, out] : cases) {
    for (const auto& [k, sigma] : std::vector<std::pair<int, double>>{{3, 0.0}, {5, 1.0}, {7, 2.0}, {9, 0.0}}) {
      for (const Border border : {Border::reflect101, Border::replicate}) {
        const Filter f = opencv_gaussian(k, sigma, border);
        SCOPED_TRACE(describe(in.size(), out, f));
        const Layout in_layout = aligned_rows(in.size());
        ASSERT_TRUE(cuda::resize_filter_exact_ratio_fits({nullptr, extent_of(in.size()), in_layout.pitch},
                                                    in_layout.stride, 1, extent_of(out), k));
        const cuda::ResizeFilterTaps taps(f.taps, cuda::ResizeFilterArithmetic::opencv);
        const Image fused = run_fused({in}, in_layout, Layout::packed(out), taps, f.border).front();
        EXPECT_TRUE(same_bytes(fused, opencv_exact::apply(Chain{{Resize{out}, f.op}}, in)));
      }
    }
  }
  constexpr int kFrames = 3;
  const Size in_size{1920, 1080}, out_size{1280, 720};
  std::vector<Image> frames;
  for (int i = 0; i < kFrames; ++i) frames.push_back(testing::random_image(in_size, 200u + i));
  const Filter f = opencv_gaussian(5, 1.0, Border::reflect101);
  const cuda::ResizeFilterTaps taps(f.taps, cuda::ResizeFilterArithmetic::opencv);
  const std::vector<Image> batched =
      run_fused(frames, aligned_rows(in_size, kFrames), Layout::packed(out_size, 0, 0, kFrames), taps, f.border);
  for (int i = 0; i < kFrames; ++i) {
    EXPECT_TRUE(same_bytes(batched[i], opencv_exact::apply(Chain{{Resize{out_size}, f.op}}, frames[i])))
        << "frame " << i;
  }
}

// Two filters planned at once hold two constant-memory slots; neither overwrites the other's taps.
TEST(ResizeFilter, TapSlotsAreIndependent) {
  SKIP_WITHOUT_DEVICE();
  const Image in = testing::synthetic_image({200, 150}, 3);
  const Filter a = gaussian(7, 2.0, Border::reflect101), b = box(3, Border::reflect101);
  const cuda::ResizeFilterTaps taps_a(a.taps);
  const cuda::ResizeFilterTaps taps_b(b.taps);
  EXPECT_NE(taps_a.slot(), taps_b.slot());
  const Size out{150, 100};
  const auto run = [&](const cuda::ResizeFilterTaps& taps, const Filter& f) {
    return run_fused({in}, Layout::packed(in.size()), Layout::packed(out), taps, f.border).front();
  };
  EXPECT_TRUE(within_one(run(taps_a, a), expected(in, out, a)));
  EXPECT_TRUE(within_one(run(taps_b, b), expected(in, out, b)));
}

// Filters with equal taps share a slot (an engine plans its chain once per frame slot): more holders than the
// bank has slots fit, and the slot is free again once its last holder is gone.
TEST(ResizeFilter, EqualTapsShareOneSlotUntilTheLastHolderGoes) {
  SKIP_WITHOUT_DEVICE();
  const Filter a = gaussian(5, 1.0, Border::reflect101);
  std::vector<cuda::ResizeFilterTaps> holders;
  for (int i = 0; i < 2 * cuda::kTapSlots; ++i) holders.emplace_back(a.taps);
  const int shared = holders.front().slot();
  for (const auto& holder : holders) EXPECT_EQ(holder.slot(), shared);
  holders.erase(holders.begin() + 1, holders.end());
  const cuda::ResizeFilterTaps other(box(3, Border::reflect101).taps);
  EXPECT_NE(other.slot(), shared) << "one holder still uses it";
  holders.clear();
  EXPECT_EQ(cuda::ResizeFilterTaps(gaussian(7, 2.0, Border::reflect101).taps).slot(), shared);
}

TEST(ResizeFilter, MovedFromTapsAreRejected) {
  SKIP_WITHOUT_DEVICE();
  cuda::ResizeFilterTaps taps(std::vector<float>{0.25f, 0.5f, 0.25f});
  const cuda::ResizeFilterTaps moved = std::move(taps);
  EXPECT_EQ(moved.size(), 3);
  EXPECT_EQ(taps.size(), 0);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  const Device device;
  const cuda::DeviceBuffer buffer(3 * 8 * 8);
  const cuda::ConstAosView in{buffer.data(), {8, 8}, 24};
  const cuda::AosView out{buffer.data(), {8, 8}, 24};
  EXPECT_THROW(cuda::resize_filter_aos(in, out, taps, cuda::BorderMode::reflect101, device.stream()),
               std::invalid_argument);
}

// Checked before anything touches a device, so these run everywhere.
TEST(ResizeFilterArguments, BadTapsAreRejected) {
  using Taps = std::vector<float>;
  EXPECT_THROW(cuda::ResizeFilterTaps(Taps{}), std::invalid_argument);
  EXPECT_THROW(cuda::ResizeFilterTaps(Taps{0.5f, 0.5f}), std::invalid_argument);            // even
  EXPECT_THROW(cuda::ResizeFilterTaps(Taps(33, 1.f / 33)), std::invalid_argument);          // K > 31
  EXPECT_THROW(cuda::ResizeFilterTaps(Taps{-0.25f, 1.5f, -0.25f}), std::invalid_argument);  // negative
  EXPECT_THROW(cuda::ResizeFilterTaps(Taps{0.5f, 0.5f, 0.5f}), std::invalid_argument);      // sum 1.5
}

TEST(ResizeFilterArguments, OpenCvArithmeticTakesOnlyWhatItComputesExactly) {
  using Taps = std::vector<float>;
  const auto opencv = cuda::ResizeFilterArithmetic::opencv;
  EXPECT_THROW(cuda::ResizeFilterTaps(Taps{0.2f, 0.6f, 0.2f}, opencv), std::invalid_argument);  // not in 1/256
  const auto fits = [](Size in, std::size_t pitch, Size out, int k) {
    return cuda::resize_filter_exact_ratio_fits({nullptr, extent_of(in), pitch}, pitch * in.height, 1, extent_of(out), k);
  };
  EXPECT_TRUE(fits({1920, 1080}, 5760, {1280, 720}, 5));
  EXPECT_TRUE(fits({1920, 1080}, 5760, {960, 2160}, 9));
  EXPECT_FALSE(fits({1920, 1080}, 5760, {1280, 720}, 11));   // beyond the path's radii
  EXPECT_FALSE(fits({1920, 1080}, 5760, {1000, 700}, 5));    // not an exact ratio
  EXPECT_FALSE(fits({1920, 1080}, 5760, {1280, 700}, 5));    // vertical scale not k/2
  EXPECT_FALSE(fits({1920, 1080}, 5761, {1280, 720}, 5));    // rows not 16-byte aligned
  EXPECT_FALSE(fits({1920, 1080}, 5760, {1280, 360}, 5));    // vertical scale 3
}

TEST(ResizeFilterArguments, TooWideADownscaleIsRejected) {
  // 20000 -> 100 is 200x: a tile's source span no longer fits shared memory.
  EXPECT_THROW(cuda::resize_filter_launch({20000, 100}, {100, 100}, 5, 1), std::invalid_argument);
  EXPECT_THROW(cuda::resize_filter_launch({0, 100}, {100, 100}, 5, 1), std::invalid_argument);
  EXPECT_THROW(cuda::resize_filter_launch({100, 100}, {100, 100}, 5, 0), std::invalid_argument);
  EXPECT_THROW(cuda::resize_filter_launch({100, 100}, {100, 100}, 33, 1), std::invalid_argument);
}

}  // namespace
}  // namespace imgpipe
