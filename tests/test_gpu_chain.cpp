// The GPU backends and planned device chains against the reference: chains of many ops on both paths (and the
// paths against each other), one planned chain over frames of changing sizes, the optimized path's fused
// resize + filter head, batches, and the error without a device. Single ops are tested in the file of their
// kernel (test_resize.cpp, test_convolve.cpp, test_transpose.cpp, test_gray.cpp, test_normalize.cpp).
#include "chain.hpp"
#include "gpu_backend.hpp"
#include "gpu_test_support.hpp"
#include "reference.hpp"
#include "resize_filter.cuh"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace imgpipe::testing {
namespace {

Image run_backend(Backend& backend, const Chain& chain, const Image& in) {
  backend.set_chain(chain);
  Image out(output_size(chain, in.size()));
  std::fill(out.data(), out.data() + out.bytes(), kPoison);
  backend.process(in.view(), out.view());
  return out;
}

cuda::BorderMode border_of_chain(Border b) {
  return b == Border::replicate ? cuda::BorderMode::replicate : cuda::BorderMode::reflect101;
}

struct ChainCase {
  std::string name;
  std::function<std::string(Size)> text;  // the chain for an input of this size
  int tolerance;  // against the reference and between the paths: one interpolating op gives ±1
};

std::vector<ChainCase> chain_cases() {
  const auto dims = [](int w, int h) { return std::to_string(std::max(1, w)) + "x" + std::to_string(std::max(1, h)); };
  return {
      {"exact_ops_then_gray", [](Size) { return "sharpen,transpose,sobel=replicate,rotate=90,flip=h,rotate=180,flip=v,gray"; }, 1},
      {"sobel_normalize_transpose", [](Size) { return "sobel,normalize,transpose"; }, 1},
      {"box_then_geometry", [](Size) { return "box=5:replicate,flip=v,rotate=90"; }, 1},
      // The optimized path moves the reorientations past the filter and runs the filter and the merged
      // reorientation as one launch (a transpose; a flip; a transpose then a turn by 180 degrees).
      {"turns_then_sharpen", [](Size) { return "rotate=90,flip=h,sharpen=replicate"; }, 0},
      {"sobel_then_turns", [](Size) { return "sobel,flip=v,rotate=180"; }, 0},
      {"sharpen_then_transverse", [](Size) { return "sharpen,rotate=90,flip=v"; }, 0},
      {"rotate_resize_flip",
       [dims](Size s) { return "rotate=270,resize=" + dims(s.height * 2 / 3, s.width / 2 + 1) + ",flip=v"; }, 1},
      {"gaussian_transpose_nearest",
       [dims](Size s) { return "gaussian=9:2.0,transpose,resize=" + dims(s.height / 3, s.width * 5 / 4) + ":nearest"; }, 1},
      // Two interpolating ops: each may be off by one, and the filter averages the resize's error, so 2.
      // The optimized path runs these heads as one fused pass: alone, and followed by plane stages.
      {"resize_then_gaussian", [dims](Size s) { return "resize=" + dims(s.width * 2 / 3, s.height * 2 / 3) + ",gaussian=5:1.0"; }, 2},
      // The optimized path moves the flip past the Gaussian (merge_reorientations) and fuses the resize with it.
      {"resize_flip_gaussian",
       [dims](Size s) { return "resize=" + dims(s.width * 3 / 4, s.height / 2) + ",flip=v,gaussian=5:1.0,rotate=90"; },
       2},
      {"resize_box_then_geometry",
       [dims](Size s) { return "resize=" + dims(s.width / 2, s.height * 3 / 4) + ",box=3:replicate,transpose,flip=h"; }, 2},
  };
}

void PrintTo(const ChainCase& c, std::ostream* os) { *os << c.name; }

class GpuChainTest : public ::testing::TestWithParam<std::tuple<ChainCase, Images>> {};

TEST_P(GpuChainTest, NaiveAndOptimizedBackendsAgree) {
  SKIP_WITHOUT_DEVICE();
  const auto& [chain_case, set] = GetParam();
  const std::unique_ptr<Backend> naive = make_gpu_backend(GpuPath::naive);
  const std::unique_ptr<Backend> optimized = make_gpu_backend(GpuPath::optimized);
  for (const testing::NamedImage& sample : load(set)) {
    const Chain chain = parse_chain(chain_case.text(sample.image.size()));
    const Image expected = reference::apply(chain, sample.image);
    const Image from_naive = run_backend(*naive, chain, sample.image);
    const Image from_optimized = run_backend(*optimized, chain, sample.image);
    std::string context = "'";
    context += to_string(chain) + "' on " + describe(sample);
    EXPECT_TRUE(within(from_optimized, from_naive, chain_case.tolerance)) << "optimized vs naive, " << context;
    EXPECT_TRUE(within(from_naive, expected, chain_case.tolerance)) << "naive vs reference, " << context;
    EXPECT_TRUE(within(from_optimized, expected, chain_case.tolerance)) << "optimized vs reference, " << context;
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, GpuChainTest,
                         ::testing::Combine(::testing::ValuesIn(chain_cases()),
                                            ::testing::Values(Images::photos, Images::odd_sizes)),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" + images_name(std::get<1>(info.param));
                         });

// One planned chain over frames of changing sizes: buffers grow, textures are remade for the grown buffer,
// smaller frames run inside larger buffers, and a frame taller than the texture unit takes (65000 rows on
// sm_90) uses the hand-written bilinear.
TEST_P(GpuPathTest, OneChainManyFrameSizes) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<Size> sizes = {{64, 48}, {300, 200}, {17, 9}, {2, 65535}, {131, 7}};
  for (const char* text : {"resize=37x23", "transpose,resize=53x31,rotate=90", "sobel,gaussian=5:1.0"}) {
    const Chain chain = parse_chain(text);
    const Device device;
    DeviceChain device_chain(GetParam(), chain);
    std::uint32_t seed = 11;
    for (Size size : sizes) {
      const Image image = testing::synthetic_image(size, seed++);
      const Size out_size = output_size(chain, size);
      const cuda::DeviceBuffer d_in = device.upload(image);
      const cuda::DeviceBuffer d_out = device.poisoned(out_size.rgb_bytes());
      device_chain.run(d_in.data(), size, d_out.data(), device.stream());
      EXPECT_TRUE(within(device.download(d_out.data(), out_size), reference::apply(chain, image), 1))
          << path_name(GetParam()) << " path, '" << text << "' on " << to_string(size);
    }
  }
}

TEST_P(GpuPathTest, EmptyChainCopies) {
  SKIP_WITHOUT_DEVICE();
  const Image image = testing::random_image({259, 131}, 3);
  EXPECT_TRUE(within(run_device_chain(GetParam(), Chain{}, image), image, 0));
}

INSTANTIATE_TEST_SUITE_P(BothPaths, GpuPathTest, ::testing::Values(GpuPath::naive, GpuPath::optimized),
                         [](const auto& info) { return path_name(info.param); });

// ------------------------------------------------------------------------------ the fused head, directly

// A linear resize followed by gaussian or box at the head of an optimized chain runs as one resize_filter_aos
// pass at that kernel's exact ratios; what follows runs from that pass's output. So there the chain's output
// is, byte for byte, the fused kernel's output with the rest of the chain applied (the reference's, for exact
// ops); at other ratios it is the naive path's, stage after stage. Either way it is within 2 of the reference
// (two rounding ops).
struct FusedHeadCase {
  std::string name;
  std::function<Size(Size)> resized;
  Op filter;
  std::vector<float> taps;  // as the backend uploads them: the double weights rounded to float
  std::vector<Op> tail;     // exact ops only
};

std::vector<float> float_taps(const std::vector<double>& w) { return {w.begin(), w.end()}; }

std::vector<FusedHeadCase> fused_head_cases() {
  const auto scaled = [](int wn, int wd, int hn, int hd) {
    return [=](Size s) { return Size{std::max(1, s.width * wn / wd), std::max(1, s.height * hn / hd)}; };
  };
  const Gaussian g5{5, 1.0, Border::reflect101};
  const Box b3{3, Border::replicate};
  const Gaussian g9{9, 2.0, Border::replicate};
  return {
      {"gaussian_alone", scaled(2, 3, 2, 3), g5, float_taps(gaussian_weights(5, 1.0)), {}},
      {"box_then_rotate_flip", scaled(1, 2, 3, 4), b3, std::vector<float>(3, static_cast<float>(1.0 / 3)),
       {Rotate{90}, Flip{Flip::Axis::vertical}}},
      {"upscale_gaussian_then_transpose", scaled(3, 2, 5, 4), g9, float_taps(gaussian_weights(9, 2.0)), {Transpose{}}},
  };
}

cuda::BorderMode filter_border(const Op& op) {
  if (const auto* g = std::get_if<Gaussian>(&op)) return border_of_chain(g->border);
  return border_of_chain(std::get<Box>(op).border);
}

// The fused kernel on its own, into a poisoned frame.
Image run_fused_kernel(const Image& in, Size out, const std::vector<float>& taps, cuda::BorderMode border) {
  const Device device;
  const cuda::DeviceBuffer d_in = device.upload(in);
  const cuda::DeviceBuffer d_out = device.poisoned(out.rgb_bytes());
  const cuda::ResizeFilterTaps fused_taps(taps);
  cuda::resize_filter_aos(cuda::as_const(aos(d_in.data(), in.size())), aos(d_out.data(), out), fused_taps, border,
                          device.stream());
  return device.download(d_out.data(), out);
}

// In fast arithmetic a resize and the filter after it are the fused kernel at every ratio, and the rest of the
// chain runs on its output.
TEST(OptimizedFusedHead, IsTheFusedKernelThenTheRest) {
  SKIP_WITHOUT_DEVICE();
  for (const FusedHeadCase& c : fused_head_cases()) {
    for (Images set : {Images::photos, Images::odd_sizes}) {
      for (const testing::NamedImage& sample : load(set)) {
        const Size resized = c.resized(sample.image.size());
        Chain chain{{Resize{resized}, c.filter}};
        chain.ops.insert(chain.ops.end(), c.tail.begin(), c.tail.end());
        const std::string context = c.name + ": '" + to_string(chain) + "' on " + describe(sample);
        ASSERT_TRUE(cuda::resize_filter_fits({sample.image.width(), sample.image.height()},
                                             {resized.width, resized.height}, static_cast<int>(c.taps.size())))
            << context;
        const Image actual = run_device_chain(GpuPath::optimized, chain, sample.image);
        const Image head = run_fused_kernel(sample.image, resized, c.taps, filter_border(c.filter));
        EXPECT_TRUE(within(actual, reference::apply(Chain{c.tail}, head), 0)) << "fused head, then " << context;
        EXPECT_TRUE(within(actual, reference::apply(chain, sample.image), 2)) << "reference, " << context;
      }
    }
  }
}

// A lone linear resize at a ratio without an exact-ratio path is the fused kernel with one tap where its output
// pays for it (resize_filter_lone_resize_pays), resize_linear_aos elsewhere: both within 1 of the reference, the
// first byte for byte the fused kernel's. Photographs and synthetic frames, scaled up and down.
TEST(OptimizedFusedHead, ALoneResizeIsTheFusedKernelWhereItsOutputPays) {
  SKIP_WITHOUT_DEVICE();
  struct Case {
    NamedImage sample;
    Size out;
  };
  std::vector<Case> cases;
  for (const NamedImage& photo : testing::photos()) {
    cases.push_back({photo, Size{2000, 1400}});
    cases.push_back({photo, Size{97, 61}});
  }
  cases.push_back({{"synthetic 1920x1088", testing::synthetic_image({1920, 1088}, 5)}, Size{1280, 725}});
  cases.push_back({{"synthetic 1001x701", testing::synthetic_image({1001, 701}, 6)}, Size{1920, 1081}});
  cases.push_back({{"synthetic 1920x1080", testing::synthetic_image({1920, 1080}, 7)}, Size{640, 480}});
  int fused = 0, staged = 0;
  for (const Case& c : cases) {
    const Chain chain{{Resize{c.out}}};
    const Size in = c.sample.image.size();
    std::string context = "'";  // built up in steps: GCC 12 misreads one long concatenation (-Wrestrict)
    context += to_string(chain) + "' on " + describe(c.sample);
    ASSERT_FALSE(cuda::resize_filter_at_exact_ratio({in.width, in.height}, {c.out.width, c.out.height}, 1)) << context;
    const Image actual = run_device_chain(GpuPath::optimized, chain, c.sample.image);
    EXPECT_TRUE(within(actual, reference::apply(chain, c.sample.image), 1)) << "reference, " << context;
    if (cuda::resize_filter_lone_resize_pays({c.out.width, c.out.height})) {
      ++fused;
      const Image head = run_fused_kernel(c.sample.image, c.out, {1.f}, cuda::BorderMode::reflect101);
      EXPECT_TRUE(within(actual, head, 0)) << "the fused kernel, " << context;
    } else {
      ++staged;
    }
  }
  EXPECT_GT(fused, 0);
  EXPECT_GT(staged, 0);
}

// A frame the fused kernel refuses (a horizontal downscale past its limit) takes the plane stages; one planned
// chain switches between the two as the input size changes.
TEST(OptimizedFusedHead, FallsBackToPlaneStagesForRefusedSizes) {
  SKIP_WITHOUT_DEVICE();
  // With K = 5 a tile of 64 resized columns reads at most 6826 source pixels per row: 100 columns from 12000 or
  // 20000 are refused, from 300 or 6000 they fit.
  struct Frame {
    Size size;
    bool fused;
  };
  for (const char* text : {"resize=100x12,gaussian=5:1.0", "resize=100x12,box=5,flip=h"}) {
    const Chain chain = parse_chain(text);
    const Device device;
    DeviceChain device_chain(GpuPath::optimized, chain);
    std::uint32_t seed = 31;
    for (const auto& [size, fused] :
         {Frame{{300, 40}, true}, Frame{{20000, 24}, false}, Frame{{6000, 37}, true}, Frame{{12000, 9}, false}}) {
      EXPECT_EQ(cuda::resize_filter_fits({size.width, size.height}, {100, 12}, 5), fused) << to_string(size);
      const Image image = testing::synthetic_image(size, seed++);
      const Size out_size = output_size(chain, size);
      const cuda::DeviceBuffer d_in = device.upload(image);
      const cuda::DeviceBuffer d_out = device.poisoned(out_size.rgb_bytes());
      device_chain.run(d_in.data(), size, d_out.data(), device.stream());
      EXPECT_TRUE(within(device.download(d_out.data(), out_size), reference::apply(chain, image), 2))
          << "'" << text << "' on " << to_string(size) << (fused ? " (fused)" : " (plane stages)");
    }
  }
}

// run_batch gives run()'s bytes frame by frame: a fused head alone (one batched launch), a fused head with
// ops after it, chains that do not fuse, chains that run batched on interleaved frames throughout (from the
// start or after the head), and the naive path. Rows of 609 bytes: no row after the first is word-aligned.
TEST(DeviceChainBatch, EqualsRunFrameByFrame) {
  SKIP_WITHOUT_DEVICE();
  constexpr int kFrames = 5;
  const Size in_size{203, 117};
  struct Case {
    GpuPath path;
    const char* text;
  };
  for (const Case& c : {Case{GpuPath::optimized, "resize=150x90,gaussian=5:1.0"},
                        Case{GpuPath::optimized, "resize=150x90,box=3,transpose"},
                        Case{GpuPath::optimized, "gaussian=3:0.0,flip=h"},
                        Case{GpuPath::optimized, "gray,sobel,normalize"},
                        Case{GpuPath::optimized, "sharpen=replicate,rotate=180,box=31"},
                        Case{GpuPath::optimized, "resize=150x90,gaussian=5:1.0,sharpen,flip=v"},
                        Case{GpuPath::optimized, "transpose,gaussian=7:2.0"},
                        Case{GpuPath::optimized, "resize=2000x1300"},  // the fused kernel, one tap
                        Case{GpuPath::naive, "resize=150x90,gaussian=5:1.0"}}) {
    const Chain chain = parse_chain(c.text);
    const Size out_size = output_size(chain, in_size);
    std::vector<std::uint8_t> packed;
    std::vector<Image> frames;
    for (int f = 0; f < kFrames; ++f) {
      frames.push_back(testing::synthetic_image(in_size, 70u + static_cast<std::uint32_t>(f)));
      packed.insert(packed.end(), frames.back().data(), frames.back().data() + frames.back().bytes());
    }
    const Device device;
    const Image all(Size{in_size.width, in_size.height * kFrames}, packed);
    const cuda::DeviceBuffer d_in = device.upload(all);
    const cuda::DeviceBuffer d_out = device.poisoned(out_size.rgb_bytes() * kFrames);
    DeviceChain device_chain(c.path, chain);
    device_chain.run_batch(d_in.data(), in_size, kFrames, d_out.data(), device.stream());
    const Image batched = device.download(d_out.data(), Size{out_size.width, out_size.height * kFrames});
    for (int f = 0; f < kFrames; ++f) {
      const Image single = run_device_chain(c.path, chain, frames[static_cast<std::size_t>(f)]);
      const Image from_batch(out_size, std::vector<std::uint8_t>(batched.data() + f * out_size.rgb_bytes(),
                                                                 batched.data() + (f + 1) * out_size.rgb_bytes()));
      EXPECT_TRUE(within(from_batch, single, 0)) << path_name(c.path) << " '" << c.text << "', frame " << f;
    }
  }
}

// The interleaved kernels start while the kernel before them in the stream finishes (programmatic dependent
// launch) and must still see stream order. Each chain's stages read what the stage before wrote and write what
// the stage before read (the plan's ping-pong buffers), and three calls are queued at once: A on a batch of 1080p
// frames; B on A's last output (read after write); C overwriting that output while B may still read it (write
// after read), through A's buffers. Each must give the bytes it gives alone. The first chain runs
// separable_aos, filter3x3_aos, pointwise_aos, normalize_aos, sobel_aos and reorient_aos; the second
// separable_aos and mirror_aos.
TEST(DeviceChainBatch, CallsQueuedBackToBackKeepStreamOrder) {
  SKIP_WITHOUT_DEVICE();
  constexpr int kFrames = 4;
  const Size size{1920, 1080};
  for (const char* text : {"gaussian=5:1.0,sharpen,gray,normalize,sobel,rotate=90", "box=3,flip=h"}) {
    const Chain chain = parse_chain(text);
    const Size out_size = output_size(chain, size);
    std::vector<std::uint8_t> packed;
    std::vector<Image> a_alone;
    for (int f = 0; f < kFrames; ++f) {
      const Image source = testing::synthetic_image(size, 80u + static_cast<std::uint32_t>(f));
      packed.insert(packed.end(), source.data(), source.data() + source.bytes());
      a_alone.push_back(run_device_chain(GpuPath::optimized, chain, source));
    }
    const Image other = testing::synthetic_image(size, 90u);
    const Image b_alone = run_device_chain(GpuPath::optimized, chain, a_alone.back());
    const Image c_alone = run_device_chain(GpuPath::optimized, chain, other);

    const Device device;
    const cuda::DeviceBuffer a_in = device.upload(Image(Size{size.width, size.height * kFrames}, packed));
    const cuda::DeviceBuffer c_in = device.upload(other);
    const cuda::DeviceBuffer a_out = device.poisoned(out_size.rgb_bytes() * kFrames);
    const cuda::DeviceBuffer b_out = device.poisoned(b_alone.bytes());
    std::uint8_t* const a_last = a_out.data() + (kFrames - 1) * out_size.rgb_bytes();
    DeviceChain device_chain(GpuPath::optimized, chain);
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(device.stream()));
    device_chain.run_batch(a_in.data(), size, kFrames, a_out.data(), device.stream());
    device_chain.run(a_last, out_size, b_out.data(), device.stream());
    device_chain.run(c_in.data(), size, a_last, device.stream());
    const Image a_then_c = device.download(a_out.data(), Size{out_size.width, out_size.height * kFrames});
    EXPECT_TRUE(within(device.download(b_out.data(), b_alone.size()), b_alone, 0))
        << text << ": B did not read what A wrote";
    EXPECT_TRUE(within(device.download(a_last, out_size), c_alone, 0)) << text << ": C's frame is not C's";
    for (int f = 0; f + 1 < kFrames; ++f) {
      const Image from_batch(out_size, std::vector<std::uint8_t>(a_then_c.data() + f * out_size.rgb_bytes(),
                                                                 a_then_c.data() + (f + 1) * out_size.rgb_bytes()));
      EXPECT_TRUE(within(from_batch, a_alone[static_cast<std::size_t>(f)], 0)) << text << ", frame " << f;
    }
  }
}

// Where no device is usable (CI), asking for a GPU backend is a clear error.
TEST(GpuBackend, ThrowsWithoutDevice) {
  if (cuda::device_available()) GTEST_SKIP() << "a CUDA device is present";
  for (GpuPath path : {GpuPath::naive, GpuPath::optimized}) {
    try {
      (void)make_gpu_backend(path);
      ADD_FAILURE() << path_name(path) << ": no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("CUDA device"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace imgpipe::testing
