// reorient_filter3x3_aos (kernels/reorient_filter.cuh) against the reference's filter and then reorientation:
// sharpen and sobel, both borders, every reorientation, on the photographs one frame per launch and on sizes no
// tile divides (1x1 and 3x7 among them) three frames per launch, with rows and frames at every alignment. Outputs
// are poisoned first, and the bytes between rows and between frames must stay poison. Both filters are integer
// arithmetic and pixels only move, so every byte must be exact. Skips without a CUDA device.
#include "chain.hpp"
#include "gpu_test_support.hpp"
#include "reference.hpp"
#include "reorient_filter.cuh"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace imgpipe::testing {
namespace {

struct Reorientation {
  const char* name;
  cuda::Reorient kernel_op;
  Op chain_op;
};

const std::vector<Reorientation> kReorientations = {
    {"transpose", cuda::Reorient::transpose, Transpose{}},
    {"rotate90", cuda::Reorient::rotate90, Rotate{90}},
    {"rotate180", cuda::Reorient::rotate180, Rotate{180}},
    {"rotate270", cuda::Reorient::rotate270, Rotate{270}},
    {"flip_h", cuda::Reorient::flip_h, Flip{Flip::Axis::horizontal}},
    {"flip_v", cuda::Reorient::flip_v, Flip{Flip::Axis::vertical}},
};

// Packed and aligned, then rows and frames misaligned in every way.
const std::vector<FrameLayout> kLayouts = {{0, 0, 0}, {1, 1, 3}, {3, 5, 1}, {2, 2, 6}};

// The photographs, one frame per launch.
std::vector<std::vector<Image>> photo_batches() {
  std::vector<std::vector<Image>> all;
  for (const NamedImage& photo : photos()) all.push_back({photo.image});
  return all;
}

// Odd sizes three frames per launch: around one tile (31 to 33), tiles cut short on either axis, one row and one
// column, and 40x24, whose packed output rows (120 or 72 bytes) are 8-byte aligned but not 16.
std::vector<std::vector<Image>> odd_size_batches() {
  std::vector<std::vector<Image>> all;
  std::uint32_t seed = 5;
  for (const Size size : std::vector<Size>{{1, 1}, {3, 7}, {2, 1}, {31, 33}, {32, 32}, {33, 31}, {203, 117}, {1, 40},
                                           {100, 1}, {40, 24}}) {
    std::vector<Image> frames;
    for (int f = 0; f < 3; ++f) frames.push_back(f == 1 ? random_image(size, seed++) : synthetic_image(size, seed++));
    all.push_back(std::move(frames));
  }
  return all;
}

// Every filter, border, reorientation and layout on each batch, against the reference.
void expect_reference_bytes(const std::vector<std::vector<Image>>& all) {
  const Device device;
  for (const cuda::SymmetricFilter filter : {cuda::SymmetricFilter::sharpen, cuda::SymmetricFilter::sobel}) {
    for (const Border border : {Border::reflect101, Border::replicate}) {
      const Op filter_op = filter == cuda::SymmetricFilter::sharpen ? Op{Sharpen{border}} : Op{Sobel{border}};
      const cuda::BorderMode mode =
          border == Border::replicate ? cuda::BorderMode::replicate : cuda::BorderMode::reflect101;
      for (const Reorientation& r : kReorientations) {
        const Chain chain{{filter_op, r.chain_op}};
        for (const std::vector<Image>& frames : all) {
          const Size size = frames.front().size();
          const cuda::Extent out_extent = cuda::reoriented_extent(r.kernel_op, extent_of(size));
          const Size out_size{out_extent.width, out_extent.height};
          const auto count = static_cast<int>(frames.size());
          std::vector<Image> expected;
          for (const Image& frame : frames) expected.push_back(reference::apply(chain, frame));
          for (const FrameLayout& layout : kLayouts) {
            const std::string what = "'" + to_string(chain) + "' on " + std::to_string(count) + " x " +
                                     to_string(size) + ", pitch +" + std::to_string(layout.pitch_pad) + ", offset " +
                                     std::to_string(layout.offset);
            const FrameBatch in(device, size, count, layout), out(device, out_size, count, layout);
            for (int f = 0; f < count; ++f) in.upload(f, frames[static_cast<std::size_t>(f)]);
            cuda::reorient_filter3x3_aos(r.kernel_op, filter, cuda::as_const(in.first()), in.stride(), out.first(),
                                         out.stride(), count, mode, device.stream());
            EXPECT_EQ(out.written_outside_frames(), 0u) << what << ": bytes outside the frames were written";
            for (int f = 0; f < count; ++f) {
              EXPECT_TRUE(within(out.download(f), expected[static_cast<std::size_t>(f)], 0)) << what << ", frame " << f;
            }
          }
        }
      }
    }
  }
}

TEST(ReorientFilterAos, PhotographsGiveTheFilterThenTheReorientation) {
  SKIP_WITHOUT_DEVICE();
  expect_reference_bytes(photo_batches());
}

TEST(ReorientFilterAos, OddSizesGiveTheFilterThenTheReorientation) {
  SKIP_WITHOUT_DEVICE();
  expect_reference_bytes(odd_size_batches());
}

TEST(ReorientFilterAos, RefusesAnOutputOfAnotherShape) {
  SKIP_WITHOUT_DEVICE();
  cuda::DeviceBuffer buffer(3 * 8 * 6 * 2);
  const cuda::ConstAosView in{buffer.data(), {8, 6}, 24};
  const cuda::AosView same{buffer.data() + 3 * 8 * 6, {8, 6}, 24};
  EXPECT_THROW(cuda::reorient_filter3x3_aos(cuda::Reorient::transpose, cuda::SymmetricFilter::sharpen, in, 3 * 8 * 6,
                                            same, 3 * 8 * 6, 1, cuda::BorderMode::reflect101, nullptr),
               std::invalid_argument);
  EXPECT_THROW(cuda::reorient_filter3x3_aos(cuda::Reorient::flip_h, cuda::SymmetricFilter::sobel, in, 3 * 8 * 6, same,
                                            3 * 8 * 6, 0, cuda::BorderMode::reflect101, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace imgpipe::testing
