// transpose, rotate and flip (kernels/transpose.cu) against the reference: on both GPU paths, and each of the
// three kernel variants (naive, tiled, tiled + padded) directly, on the photographs and on sizes no tile
// divides. Pixels only move, so all must be exact.
#include "gpu_op_test.hpp"
#include "layout.cuh"
#include "reference.hpp"
#include "transpose.cuh"

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace imgpipe::testing {
namespace {

std::vector<OpCase> transpose_cases() {
  return {
      {"transpose", fixed_op(Transpose{}), 0},
      {"rotate90", fixed_op(Rotate{90}), 0},
      {"rotate180", fixed_op(Rotate{180}), 0},
      {"rotate270", fixed_op(Rotate{270}), 0},
      {"flip_h", fixed_op(Flip{Flip::Axis::horizontal}), 0},
      {"flip_v", fixed_op(Flip{Flip::Axis::vertical}), 0},
  };
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuOpTest, on_both_paths_and_image_sets(transpose_cases()), gpu_op_test_name);

// ------------------------------------------------------------------- the transpose variants, directly

enum class ReorientVariant { naive, tiled, tiled_padded, interleaved };

std::string variant_name(ReorientVariant v) {
  switch (v) {
    case ReorientVariant::naive: return "naive";
    case ReorientVariant::tiled: return "tiled";
    case ReorientVariant::tiled_padded: return "tiled_padded";
    case ReorientVariant::interleaved: return "interleaved";
  }
  return "unknown";
}

struct ReorientCase {
  std::string name;
  cuda::Reorient kernel_op;
  Op chain_op;
};

std::vector<ReorientCase> reorient_cases() {
  return {{"transpose", cuda::Reorient::transpose, Transpose{}},
          {"rotate90", cuda::Reorient::rotate90, Rotate{90}},
          {"rotate180", cuda::Reorient::rotate180, Rotate{180}},
          {"rotate270", cuda::Reorient::rotate270, Rotate{270}},
          {"flip_h", cuda::Reorient::flip_h, Flip{Flip::Axis::horizontal}},
          {"flip_v", cuda::Reorient::flip_v, Flip{Flip::Axis::vertical}}};
}

Image run_reorient(ReorientVariant variant, cuda::Reorient op, const Image& in) {
  const Device device;
  const cuda::Extent out_extent = cuda::reoriented_extent(op, extent_of(in.size()));
  const Size out_size{out_extent.width, out_extent.height};
  const cuda::DeviceBuffer d_in = device.upload(in);
  const cuda::DeviceBuffer d_out = device.poisoned(out_size.rgb_bytes());
  if (variant == ReorientVariant::naive) {
    cuda::reorient_naive(op, cuda::as_const(aos(d_in.data(), in.size())), aos(d_out.data(), out_size),
                         device.stream());
    return device.download(d_out.data(), out_size);
  }
  if (variant == ReorientVariant::interleaved) {
    cuda::reorient_aos(op, cuda::as_const(aos(d_in.data(), in.size())), in.bytes(), aos(d_out.data(), out_size),
                       out_size.rgb_bytes(), 1, device.stream());
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
  if (variant == ReorientVariant::tiled) {
    cuda::reorient_tiled(op, from, to, device.stream());
  } else {
    cuda::reorient_tiled_padded(op, from, to, device.stream());
  }
  cuda::interleave(cuda::as_const(to), aos(d_out.data(), out_size), device.stream());
  return device.download(d_out.data(), out_size);
}

void PrintTo(ReorientVariant v, std::ostream* os) { *os << variant_name(v); }
void PrintTo(const ReorientCase& c, std::ostream* os) { *os << c.name; }

class ReorientTest : public ::testing::TestWithParam<std::tuple<ReorientVariant, ReorientCase, Images>> {};

TEST_P(ReorientTest, IsExact) {
  SKIP_WITHOUT_DEVICE();
  const auto& [variant, op_case, set] = GetParam();
  for (const testing::NamedImage& sample : load(set)) {
    const Image expected = reference::apply(op_case.chain_op, sample.image);
    EXPECT_TRUE(within(run_reorient(variant, op_case.kernel_op, sample.image), expected, 0))
        << variant_name(variant) << " " << op_case.name << " on " << describe(sample);
  }
}

INSTANTIATE_TEST_SUITE_P(AllVariants, ReorientTest,
                         ::testing::Combine(::testing::Values(ReorientVariant::naive, ReorientVariant::tiled,
                                                              ReorientVariant::tiled_padded, ReorientVariant::interleaved),
                                            ::testing::ValuesIn(reorient_cases()),
                                            ::testing::Values(Images::photos, Images::odd_sizes)),
                         [](const auto& info) {
                           return variant_name(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name + "_" +
                                  images_name(std::get<2>(info.param));
                         });

// The interleaved variant on three frames per launch whose rows and frames start at every alignment (pitch 3w + 1,
// the first frame one byte into its buffer, 5 bytes between frames): each frame exact, no byte between rows or
// frames written.
TEST(ReorientInterleaved, BatchesAtAnyAlignment) {
  SKIP_WITHOUT_DEVICE();
  for (const ReorientCase& c : reorient_cases()) {
    for (const Size size : std::vector<Size>{{1, 1}, {3, 7}, {33, 65}, {203, 117}}) {
      const Device device;
      const cuda::Extent out_extent = cuda::reoriented_extent(c.kernel_op, extent_of(size));
      const Size out_size{out_extent.width, out_extent.height};
      constexpr int kFrames = 3;
      const FrameBatch in(device, size, kFrames, kMisaligned), out(device, out_size, kFrames, kMisaligned);
      std::vector<Image> frames;
      for (int f = 0; f < kFrames; ++f) {
        frames.push_back(testing::random_image(size, 40u + static_cast<std::uint32_t>(f)));
        in.upload(f, frames.back());
      }
      cuda::reorient_aos(c.kernel_op, cuda::as_const(in.first()), in.stride(), out.first(), out.stride(), kFrames,
                         device.stream());
      EXPECT_EQ(out.written_outside_frames(), 0u)
          << c.name << " " << to_string(size) << ": bytes outside the frames were written";
      for (int f = 0; f < kFrames; ++f) {
        EXPECT_TRUE(within(out.download(f), reference::apply(c.chain_op, frames[static_cast<std::size_t>(f)]), 0))
            << c.name << " " << to_string(size) << ", frame " << f;
      }
    }
  }
}

}  // namespace
}  // namespace imgpipe::testing
