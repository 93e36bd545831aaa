// deinterleave and interleave (kernels/layout.cu) directly: AoS -> planes -> AoS on every alignment path of the
// layout kernels, on the photographs and on sizes no tile divides. Exact, and row padding is never written.
#include "gpu_test_support.hpp"
#include "layout.cuh"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

namespace imgpipe::testing {
namespace {

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

}  // namespace
}  // namespace imgpipe::testing
