// The GPU kernels and backends against the reference: every op on both paths, the three transpose variants
// and the layout passes directly, on the photographs and on sizes no tile divides. Device outputs are
// poisoned before every run, so a pixel nobody wrote fails. Geometric ops and layout must be exact;
// interpolation, filters, gray and normalize within ±1 per 8-bit value. Nothing here measures speed.
#include "chain.hpp"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "gpu_backend.hpp"
#include "layout.cuh"
#include "reference.hpp"
#include "resize_filter.cuh"
#include "test_images.hpp"
#include "transpose.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

namespace imgpipe {

// Readable test parameters in gtest's listings and failure reports.
void PrintTo(GpuPath path, std::ostream* os) { *os << (path == GpuPath::naive ? "naive" : "optimized"); }

namespace {

constexpr unsigned char kPoison = 0xA5;

// ------------------------------------------------------------------------------------------- plumbing

// Test traffic on one stream, so uploads, poisoning, kernels and downloads run in issue order.
class Device {
 public:
  Device() : stream_(cuda::Stream::create()) {}
  cudaStream_t stream() const { return stream_.get(); }

  cuda::DeviceBuffer poisoned(std::size_t bytes) const {
    cuda::DeviceBuffer buffer(bytes);
    IMGPIPE_CUDA_CHECK(cudaMemsetAsync(buffer.data(), kPoison, bytes, stream()));
    return buffer;
  }
  // `image` into a poisoned buffer at byte `offset`, rows `pitch` bytes apart.
  cuda::DeviceBuffer upload(const Image& image, std::size_t pitch, std::size_t offset) const {
    cuda::DeviceBuffer buffer = poisoned(offset + pitch * static_cast<std::size_t>(image.height()));
    const std::size_t row = 3 * static_cast<std::size_t>(image.width());
    IMGPIPE_CUDA_CHECK(cudaMemcpy2DAsync(buffer.data() + offset, pitch, image.data(), row, row, image.height(),
                                         cudaMemcpyHostToDevice, stream()));
    return buffer;
  }
  cuda::DeviceBuffer upload(const Image& image) const { return upload(image, 3 * std::size_t(image.width()), 0); }
  void poison(const cuda::PlaneBuffer& planes) const {
    const cuda::ConstPlanesView whole = planes.whole();
    for (const std::uint8_t* p : whole.plane) {
      IMGPIPE_CUDA_CHECK(cudaMemsetAsync(const_cast<std::uint8_t*>(p), kPoison, whole.pitch * whole.extent.height,
                                         stream()));
    }
  }
  // Rows of `bytes_per_row` bytes, `pitch` apart, back to the host; waits for everything queued before.
  std::vector<std::uint8_t> download(const std::uint8_t* data, std::size_t pitch, std::size_t bytes_per_row,
                                     int rows) const {
    std::vector<std::uint8_t> host(bytes_per_row * static_cast<std::size_t>(rows));
    IMGPIPE_CUDA_CHECK(cudaMemcpy2DAsync(host.data(), bytes_per_row, data, pitch, bytes_per_row, rows,
                                         cudaMemcpyDeviceToHost, stream()));
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream()));
    return host;
  }
  Image download(const std::uint8_t* data, Size size, std::size_t pitch) const {
    return Image(size, download(data, pitch, 3 * static_cast<std::size_t>(size.width), size.height));
  }
  Image download(const std::uint8_t* data, Size size) const { return download(data, size, 3 * std::size_t(size.width)); }

 private:
  cuda::Stream stream_;
};

cuda::Extent extent_of(Size s) { return {s.width, s.height}; }
cuda::AosView aos(std::uint8_t* data, Size s, std::size_t pitch) { return {data, extent_of(s), pitch}; }
cuda::AosView aos(std::uint8_t* data, Size s) { return aos(data, s, 3 * std::size_t(s.width)); }
cuda::BorderMode border_of_chain(Border b) {
  return b == Border::replicate ? cuda::BorderMode::replicate : cuda::BorderMode::reflect101;
}

// Every value of `actual` within `tolerance` of `expected`; on failure, how many are not and the first one.
::testing::AssertionResult within(const Image& actual, const Image& expected, int tolerance) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "size " << to_string(actual.size()) << ", expected "
                                         << to_string(expected.size());
  }
  std::size_t bad = 0, first = 0;
  int worst = 0;
  for (std::size_t i = 0; i < actual.bytes(); ++i) {
    const int d = std::abs(actual.data()[i] - expected.data()[i]);
    if (d > tolerance && bad++ == 0) first = i;
    worst = std::max(worst, d);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const std::size_t pixel = first / 3;
  return ::testing::AssertionFailure()
         << bad << " of " << actual.bytes() << " values off by more than " << tolerance << " (worst " << worst
         << "); first at x=" << pixel % actual.width() << " y=" << pixel / actual.width() << " c=" << first % 3
         << ": got " << int(actual.data()[first]) << ", expected " << int(expected.data()[first])
         << (actual.data()[first] == kPoison ? " (the poison: never written?)" : "");
}

// Uploads `in`, runs `chain` on the device with `path` into a poisoned buffer, downloads.
Image run_device_chain(GpuPath path, const Chain& chain, const Image& in) {
  const Device device;
  const Size out_size = output_size(chain, in.size());
  const cuda::DeviceBuffer d_in = device.upload(in);
  const cuda::DeviceBuffer d_out = device.poisoned(out_size.rgb_bytes());
  DeviceChain device_chain(path, chain);
  device_chain.run(d_in.data(), in.size(), d_out.data(), device.stream());
  return device.download(d_out.data(), out_size);
}

Image run_backend(Backend& backend, const Chain& chain, const Image& in) {
  backend.set_chain(chain);
  Image out(output_size(chain, in.size()));
  std::fill(out.data(), out.data() + out.bytes(), kPoison);
  backend.process(in.view(), out.view());
  return out;
}

std::string path_name(GpuPath path) { return path == GpuPath::naive ? "naive" : "optimized"; }

enum class Images { photos, odd_sizes };

std::string images_name(Images set) { return set == Images::photos ? "photos" : "odd_sizes"; }

std::vector<testing::NamedImage> load(Images set) {
  if (set == Images::photos) return testing::photos();
  std::vector<testing::NamedImage> images;
  std::uint32_t seed = 1;
  for (Size s : testing::odd_sizes()) images.push_back({to_string(s), testing::synthetic_image(s, seed++)});
  return images;
}

std::string describe(const testing::NamedImage& sample) {
  return sample.name + " (" + to_string(sample.image.size()) + ")";
}

#define SKIP_WITHOUT_DEVICE()                      \
  if (!imgpipe::cuda::device_available()) GTEST_SKIP() << "no CUDA device: GPU tests run on the H200"

// ------------------------------------------------------------------------------ every op, both paths

struct OpCase {
  std::string name;
  std::function<Op(Size)> make;  // the op for an input of this size
  int tolerance;
};

std::vector<OpCase> op_cases() {
  const auto fixed = [](Op op) { return [op](Size) { return op; }; };
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
      {"gaussian_3", fixed(Gaussian{3, 0.0, Border::reflect101}), 1},
      {"gaussian_5_sigma1", fixed(Gaussian{5, 1.0, Border::reflect101}), 1},
      {"gaussian_5_replicate", fixed(Gaussian{5, 1.0, Border::replicate}), 1},
      {"gaussian_31_sigma6", fixed(Gaussian{31, 6.0, Border::reflect101}), 1},
      {"gaussian_31_replicate", fixed(Gaussian{31, 0.0, Border::replicate}), 1},
      {"box_3", fixed(Box{3, Border::reflect101}), 1},
      {"box_9_replicate", fixed(Box{9, Border::replicate}), 1},
      {"box_31", fixed(Box{31, Border::reflect101}), 1},
      {"sharpen", fixed(Sharpen{Border::reflect101}), 0},
      {"sharpen_replicate", fixed(Sharpen{Border::replicate}), 0},
      {"sobel", fixed(Sobel{Border::reflect101}), 0},
      {"sobel_replicate", fixed(Sobel{Border::replicate}), 0},
      {"transpose", fixed(Transpose{}), 0},
      {"rotate90", fixed(Rotate{90}), 0},
      {"rotate180", fixed(Rotate{180}), 0},
      {"rotate270", fixed(Rotate{270}), 0},
      {"flip_h", fixed(Flip{Flip::Axis::horizontal}), 0},
      {"flip_v", fixed(Flip{Flip::Axis::vertical}), 0},
      {"gray", fixed(Gray{}), 1},
      {"normalize", fixed(Normalize{}), 1},
  };
}

void PrintTo(Images set, std::ostream* os) { *os << images_name(set); }
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

class GpuOpTest : public ::testing::TestWithParam<std::tuple<GpuPath, OpCase, Images>> {};

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

INSTANTIATE_TEST_SUITE_P(AllOps, GpuOpTest,
                         ::testing::Combine(::testing::Values(GpuPath::naive, GpuPath::optimized),
                                            ::testing::ValuesIn(op_cases()),
                                            ::testing::Values(Images::photos, Images::odd_sizes)),
                         [](const auto& info) {
                           return path_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name + "_" +
                                  images_name(std::get<2>(info.param));
                         });

// ------------------------------------------------------------------- the transpose variants, directly

enum class DihedralVariant { naive, tiled, tiled_padded };

std::string variant_name(DihedralVariant v) {
  switch (v) {
    case DihedralVariant::naive: return "naive";
    case DihedralVariant::tiled: return "tiled";
    case DihedralVariant::tiled_padded: return "tiled_padded";
  }
  return "unknown";
}

struct DihedralCase {
  std::string name;
  cuda::Dihedral kernel_op;
  Op chain_op;
};

std::vector<DihedralCase> dihedral_cases() {
  return {{"transpose", cuda::Dihedral::transpose, Transpose{}},
          {"rotate90", cuda::Dihedral::rotate90, Rotate{90}},
          {"rotate180", cuda::Dihedral::rotate180, Rotate{180}},
          {"rotate270", cuda::Dihedral::rotate270, Rotate{270}},
          {"flip_h", cuda::Dihedral::flip_h, Flip{Flip::Axis::horizontal}},
          {"flip_v", cuda::Dihedral::flip_v, Flip{Flip::Axis::vertical}}};
}

Image run_dihedral(DihedralVariant variant, cuda::Dihedral op, const Image& in) {
  const Device device;
  const cuda::Extent out_extent = cuda::dihedral_extent(op, extent_of(in.size()));
  const Size out_size{out_extent.width, out_extent.height};
  const cuda::DeviceBuffer d_in = device.upload(in);
  const cuda::DeviceBuffer d_out = device.poisoned(out_size.rgb_bytes());
  if (variant == DihedralVariant::naive) {
    cuda::dihedral_naive(op, cuda::as_const(aos(d_in.data(), in.size())), aos(d_out.data(), out_size),
                         device.stream());
    return device.download(d_out.data(), out_size);
  }
  const cuda::PlaneBuffer planes_in(extent_of(in.size()));
  const cuda::PlaneBuffer planes_out(extent_of(out_size));
  device.poison(planes_in);
  device.poison(planes_out);
  cuda::deinterleave(cuda::as_const(aos(d_in.data(), in.size())), planes_in.view(extent_of(in.size())),
                     device.stream());
  const cuda::ConstPlanesView from = cuda::as_const(planes_in.view(extent_of(in.size())));
  const cuda::PlanesView to = planes_out.view(extent_of(out_size));
  if (variant == DihedralVariant::tiled) {
    cuda::dihedral_tiled(op, from, to, device.stream());
  } else {
    cuda::dihedral_tiled_padded(op, from, to, device.stream());
  }
  cuda::interleave(cuda::as_const(to), aos(d_out.data(), out_size), device.stream());
  return device.download(d_out.data(), out_size);
}

void PrintTo(DihedralVariant v, std::ostream* os) { *os << variant_name(v); }
void PrintTo(const DihedralCase& c, std::ostream* os) { *os << c.name; }

class DihedralTest : public ::testing::TestWithParam<std::tuple<DihedralVariant, DihedralCase, Images>> {};

TEST_P(DihedralTest, IsExact) {
  SKIP_WITHOUT_DEVICE();
  const auto& [variant, op_case, set] = GetParam();
  for (const testing::NamedImage& sample : load(set)) {
    const Image expected = reference::apply(op_case.chain_op, sample.image);
    EXPECT_TRUE(within(run_dihedral(variant, op_case.kernel_op, sample.image), expected, 0))
        << variant_name(variant) << " " << op_case.name << " on " << describe(sample);
  }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, DihedralTest,
                         ::testing::Combine(::testing::Values(DihedralVariant::naive, DihedralVariant::tiled,
                                                              DihedralVariant::tiled_padded),
                                            ::testing::ValuesIn(dihedral_cases()),
                                            ::testing::Values(Images::photos, Images::odd_sizes)),
                         [](const auto& info) {
                           return variant_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name + "_" +
                                  images_name(std::get<2>(info.param));
                         });

// --------------------------------------------------------------------------------- layout, directly

// Pointer and pitch alignment of the views, choosing the layout kernels' 16-byte, 4-byte or byte path.
enum class Alignment { words16, words4, bytes };

std::string alignment_name(Alignment a) {
  switch (a) {
    case Alignment::words16: return "words16";
    case Alignment::words4: return "words4";
    case Alignment::bytes: return "bytes";
  }
  return "unknown";
}

void PrintTo(Alignment a, std::ostream* os) { *os << alignment_name(a); }

class LayoutTest : public ::testing::TestWithParam<std::tuple<Alignment, Images>> {};

// AoS -> planes -> AoS: the planes hold exactly the channels, the round trip is exact, and row padding on
// either side is never written.
TEST_P(LayoutTest, RoundTripIsExact) {
  SKIP_WITHOUT_DEVICE();
  const auto& [alignment, set] = GetParam();
  for (const testing::NamedImage& sample : load(set)) {
    const Image& image = sample.image;
    const Device device;
    const std::size_t row = 3 * static_cast<std::size_t>(image.width());
    const auto w = static_cast<std::size_t>(image.width());
    const auto h = image.height();
    // words16: 16-byte pitch, aligned base. words4: a 4-byte aligned base and pitch that 16 does not divide.
    // bytes: odd offsets and pitches on both sides, the planes packed into one buffer.
    std::size_t pitch = 0, offset = 0;
    switch (alignment) {
      case Alignment::words16: pitch = (row + 15) / 16 * 16; break;
      case Alignment::words4:
        pitch = (row + 3) / 4 * 4 + ((row + 3) / 4 * 4 % 16 == 0 ? 4 : 0);
        offset = 4;
        break;
      case Alignment::bytes:
        pitch = row + 1;
        offset = 1;
        break;
    }
    const cuda::DeviceBuffer d_in = device.upload(image, pitch, offset);
    cuda::PlaneBuffer plane_buffer;
    cuda::DeviceBuffer packed_planes;
    cuda::PlanesView planes;
    if (alignment == Alignment::bytes) {
      const std::size_t plane_pitch = w + 1, plane_bytes = plane_pitch * h;
      packed_planes = device.poisoned(1 + 3 * plane_bytes);
      for (int c = 0; c < 3; ++c) planes.plane[c] = packed_planes.data() + 1 + c * plane_bytes;
      planes.extent = extent_of(image.size());
      planes.pitch = plane_pitch;
    } else {
      plane_buffer.reserve(extent_of(image.size()));
      device.poison(plane_buffer);
      planes = plane_buffer.view(extent_of(image.size()));
    }
    cuda::deinterleave(cuda::as_const(aos(d_in.data() + offset, image.size(), pitch)), planes, device.stream());
    for (int c = 0; c < 3; ++c) {
      const std::vector<std::uint8_t> plane = device.download(planes.plane[c], planes.pitch, planes.pitch, h);
      std::size_t wrong = 0, overrun = 0;
      for (int y = 0; y < h; ++y)
        for (std::size_t x = 0; x < planes.pitch; ++x) {
          const std::uint8_t v = plane[y * planes.pitch + x];
          if (x < w) wrong += v != image.at(static_cast<int>(x), y, c);
          else overrun += v != kPoison;
        }
      EXPECT_EQ(wrong, 0u) << "plane " << c << " after deinterleave, " << alignment_name(alignment) << ", "
                           << describe(sample);
      EXPECT_EQ(overrun, 0u) << "deinterleave wrote into the row padding of plane " << c << ", "
                             << alignment_name(alignment) << ", " << describe(sample);
    }
    const cuda::DeviceBuffer d_out = device.poisoned(offset + pitch * h);
    cuda::interleave(cuda::as_const(planes), aos(d_out.data() + offset, image.size(), pitch), device.stream());
    const std::vector<std::uint8_t> padded = device.download(d_out.data() + offset, pitch, pitch, h);
    std::vector<std::uint8_t> packed(image.bytes());
    std::size_t overrun = 0;
    for (int y = 0; y < h; ++y) {
      std::copy_n(padded.begin() + y * pitch, row, packed.begin() + y * row);
      overrun += std::count_if(padded.begin() + y * pitch + row, padded.begin() + (y + 1) * pitch,
                               [](std::uint8_t v) { return v != kPoison; });
    }
    EXPECT_TRUE(within(Image(image.size(), packed), image, 0))
        << "interleave, " << alignment_name(alignment) << ", " << describe(sample);
    EXPECT_EQ(overrun, 0u) << "interleave wrote into row padding, " << alignment_name(alignment) << ", "
                           << describe(sample);
  }
}

INSTANTIATE_TEST_SUITE_P(AllAlignments, LayoutTest,
                         ::testing::Combine(::testing::Values(Alignment::words16, Alignment::words4, Alignment::bytes),
                                            ::testing::Values(Images::photos, Images::odd_sizes)),
                         [](const auto& info) {
                           return alignment_name(std::get<0>(info.param)) + "_" + images_name(std::get<1>(info.param));
                         });

// ------------------------------------------------------------------------------- chains and backends

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
      {"rotate_resize_flip",
       [dims](Size s) { return "rotate=270,resize=" + dims(s.height * 2 / 3, s.width / 2 + 1) + ",flip=v"; }, 1},
      {"gaussian_transpose_nearest",
       [dims](Size s) { return "gaussian=9:2.0,transpose,resize=" + dims(s.height / 3, s.width * 5 / 4) + ":nearest"; }, 1},
      // Two interpolating ops: each may be off by one, and the filter averages the resize's error, so 2.
      // The optimized path runs these heads as one fused pass: alone, and followed by plane stages.
      {"resize_then_gaussian", [dims](Size s) { return "resize=" + dims(s.width * 2 / 3, s.height * 2 / 3) + ",gaussian=5:1.0"; }, 2},
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

class GpuPathTest : public ::testing::TestWithParam<GpuPath> {};

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
// pass; what follows it runs on planes from that pass's output. So the chain's output is, byte for byte, the
// fused kernel's output with the rest of the chain applied (the reference's, for exact ops), and within 2 of
// the reference (two rounding ops).
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
        const Image head = run_fused_kernel(sample.image, resized, c.taps, filter_border(c.filter));
        const Image actual = run_device_chain(GpuPath::optimized, chain, sample.image);
        EXPECT_TRUE(within(actual, reference::apply(Chain{c.tail}, head), 0)) << "fused head, then " << context;
        EXPECT_TRUE(within(actual, reference::apply(chain, sample.image), 2)) << "reference, " << context;
      }
    }
  }
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
// ops after it, a chain that does not fuse, and the naive path.
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
}  // namespace imgpipe
