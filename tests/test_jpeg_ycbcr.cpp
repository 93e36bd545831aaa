// The JPEG YCbCr planes -> RGB kernel (kernels/jpeg_ycbcr.cuh) against libjpeg's decoder written out on the
// CPU the way libjpeg itself is shaped: whole chroma rows upsampled first (jdsample.c's h2v1 and h2v2 "fancy"
// upsamplers), then the colour tables of jdcolor.c looked up. Exact, on random planes of odd sizes and pitches,
// for every chroma layout, into a poisoned output. Skips without a CUDA device.
#include "gpu_test_support.hpp"
#include "jpeg_ycbcr.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <vector>

namespace imgpipe::testing {
namespace {

using cuda::JpegChroma;

struct Plane {
  std::vector<std::uint8_t> bytes;
  std::size_t pitch = 0;
  int width = 0, height = 0;
  int at(int x, int y) const { return bytes[static_cast<std::size_t>(y) * pitch + static_cast<std::size_t>(x)]; }
};

// h2v1_fancy_upsample: one chroma row to twice its width. A row of one sample (an image 2 pixels wide) is where
// libjpeg reads past the row into the inverse DCT's padding, which decoded planes do not hold: the kernel, and so
// this model, repeat the edge sample there instead.
std::vector<int> upsample_row(const std::vector<int>& row, int out_width) {
  const int n = static_cast<int>(row.size());
  std::vector<int> out(2 * n);
  out[0] = row[0];
  if (n == 1) {
    out[1] = row[0];
  } else {
    out[1] = (row[0] * 3 + row[1] + 2) >> 2;
    for (int i = 1; i < n - 1; ++i) {
      out[2 * i] = (row[i] * 3 + row[i - 1] + 1) >> 2;
      out[2 * i + 1] = (row[i] * 3 + row[i + 1] + 2) >> 2;
    }
    out[2 * n - 2] = (row[n - 1] * 3 + row[n - 2] + 1) >> 2;
    out[2 * n - 1] = row[n - 1];
  }
  out.resize(out_width);
  return out;
}

// h2v2_fancy_upsample: output rows 2r and 2r + 1 from chroma row r and the row above or below it (the edge row
// standing in past the top and bottom), column sums at 4x, then across at 16x.
std::vector<int> upsample_half_row(const Plane& c, int out_row, int out_width) {
  const int r = out_row / 2;
  const int other = out_row % 2 == 0 ? std::max(r - 1, 0) : std::min(r + 1, c.height - 1);
  std::vector<int> sums(c.width);
  for (int x = 0; x < c.width; ++x) sums[x] = c.at(x, r) * 3 + c.at(x, other);
  const int n = c.width;
  std::vector<int> out(2 * n);
  if (n == 1) {
    out[0] = (sums[0] * 4 + 8) >> 4;
    out[1] = (sums[0] * 4 + 7) >> 4;
  } else {
    out[0] = (sums[0] * 4 + 8) >> 4;
    out[1] = (sums[0] * 3 + sums[1] + 7) >> 4;
    for (int i = 1; i < n - 1; ++i) {
      out[2 * i] = (sums[i] * 3 + sums[i - 1] + 8) >> 4;
      out[2 * i + 1] = (sums[i] * 3 + sums[i + 1] + 7) >> 4;
    }
    out[2 * n - 2] = (sums[n - 1] * 3 + sums[n - 2] + 8) >> 4;
    out[2 * n - 1] = (sums[n - 1] * 4 + 7) >> 4;
  }
  out.resize(out_width);
  return out;
}

std::vector<int> chroma_row(const Plane& c, JpegChroma chroma, int y, int width) {
  if (chroma == JpegChroma::half) return upsample_half_row(c, y, width);
  std::vector<int> row(c.width);
  for (int x = 0; x < c.width; ++x) row[x] = c.at(x, y);
  return chroma == JpegChroma::half_width ? upsample_row(row, width) : row;
}

// jdcolor.c's build_ycc_rgb_table: SCALEBITS 16, ONE_HALF folded into the tables as there.
struct ColourTables {
  std::array<int, 256> cr_r{}, cb_b{}, cr_g{}, cb_g{};
  ColourTables() {
    const auto fix = [](double x) { return static_cast<long>(x * 65536 + 0.5); };
    for (int i = 0; i < 256; ++i) {
      const long x = i - 128;
      cr_r[i] = static_cast<int>((fix(1.40200) * x + 32768) >> 16);
      cb_b[i] = static_cast<int>((fix(1.77200) * x + 32768) >> 16);
      cr_g[i] = static_cast<int>(-fix(0.71414) * x);
      cb_g[i] = static_cast<int>(-fix(0.34414) * x + 32768);
    }
  }
};

Image libjpeg_rgb(const Plane& luma, const Plane& cb, const Plane& cr, JpegChroma chroma) {
  static const ColourTables tables;
  const auto clamp = [](int v) { return static_cast<std::uint8_t>(std::clamp(v, 0, 255)); };
  Image out({luma.width, luma.height});
  for (int y = 0; y < luma.height; ++y) {
    std::vector<int> cb_row, cr_row;
    if (chroma != JpegChroma::none) {
      cb_row = chroma_row(cb, chroma, y, luma.width);
      cr_row = chroma_row(cr, chroma, y, luma.width);
    }
    for (int x = 0; x < luma.width; ++x) {
      std::uint8_t* rgb = out.data() + 3 * (static_cast<std::size_t>(y) * luma.width + x);
      const int l = luma.at(x, y);
      if (chroma == JpegChroma::none) {
        rgb[0] = rgb[1] = rgb[2] = static_cast<std::uint8_t>(l);
        continue;
      }
      rgb[0] = clamp(l + tables.cr_r[cr_row[x]]);
      rgb[1] = clamp(l + ((tables.cb_g[cb_row[x]] + tables.cr_g[cr_row[x]]) >> 16));
      rgb[2] = clamp(l + tables.cb_b[cb_row[x]]);
    }
  }
  return out;
}

// Rows `pitch` bytes apart; by default 5 bytes more than the width, so most rows start off a word.
Plane random_plane(std::mt19937& random, int width, int height, std::size_t pitch = 0) {
  Plane p;
  p.pitch = pitch != 0 ? pitch : static_cast<std::size_t>(width) + 5;
  p.width = width;
  p.height = height;
  p.bytes.resize(p.pitch * static_cast<std::size_t>(height));
  for (auto& b : p.bytes) b = static_cast<std::uint8_t>(random());
  return p;
}

const char* chroma_name(JpegChroma chroma) {
  switch (chroma) {
    case JpegChroma::full: return "4:4:4";
    case JpegChroma::half_width: return "4:2:2";
    case JpegChroma::half: return "4:2:0";
    case JpegChroma::none: return "grayscale";
  }
  return "?";
}

TEST(JpegPlanesToRgb, EqualsLibjpegsUpsamplingAndColourTablesOnEverySizeAndLayout) {
  SKIP_WITHOUT_DEVICE();
  const Device device;
  std::mt19937 random(20);
  for (const Size size : {Size{1, 1}, Size{1, 4}, Size{2, 3}, Size{3, 1}, Size{3, 7}, Size{4, 4}, Size{17, 9}, Size{333, 217},
                          Size{641, 360}}) {
    for (const JpegChroma chroma : {JpegChroma::full, JpegChroma::half_width, JpegChroma::half, JpegChroma::none}) {
      for (const bool word_rows : {false, true}) {  // luma rows at any byte, then all on a word
        SCOPED_TRACE(to_string(size) + " " + chroma_name(chroma) + (word_rows ? ", luma rows on words" : ""));
        const cuda::Extent c = cuda::jpeg_chroma_extent({size.width, size.height}, chroma);
        const std::size_t luma_pitch = word_rows ? (static_cast<std::size_t>(size.width) + 3) / 4 * 4 + 8 : 0;
        const Plane luma = random_plane(random, size.width, size.height, luma_pitch);
        const Plane cb = random_plane(random, std::max(c.width, 1), std::max(c.height, 1));
        const Plane cr = random_plane(random, std::max(c.width, 1), std::max(c.height, 1));
        cuda::JpegPlanes planes{.extent = {size.width, size.height}, .chroma = chroma};
        std::vector<cuda::DeviceBuffer> uploaded;
        for (const Plane* p : {&luma, &cb, &cr}) {
          uploaded.emplace_back(p->bytes.size());
          IMGPIPE_CUDA_CHECK(
              cudaMemcpy(uploaded.back().data(), p->bytes.data(), p->bytes.size(), cudaMemcpyHostToDevice));
        }
        for (int p = 0; p < 3; ++p) {
          planes.plane[p] = uploaded[p].data();
          planes.pitch[p] = (p == 0 ? luma : cb).pitch;
        }
        const Image expected = libjpeg_rgb(luma, cb, cr, chroma);
        // Rows that start at any byte (word stores only where a row's four pixels are aligned), then rows that
        // all start on a word.
        for (const std::size_t out_pitch : {3 * static_cast<std::size_t>(size.width) + 7,
                                            (3 * static_cast<std::size_t>(size.width) + 3) / 4 * 4 + 16}) {
          const cuda::DeviceBuffer out = device.poisoned(out_pitch * size.height);
          cuda::jpeg_planes_to_rgb(planes, aos(out.data(), size, out_pitch), device.stream());
          EXPECT_TRUE(within(device.download(out.data(), size, out_pitch), expected, 0)) << "pitch " << out_pitch;
        }
      }
    }
  }
}

TEST(JpegPlanesToRgb, RefusesMismatchedExtentsMissingPlanesAndShortPitches) {
  SKIP_WITHOUT_DEVICE();
  std::uint8_t byte = 0;
  const auto planes = [&](JpegChroma chroma, std::size_t chroma_pitch) {
    return cuda::JpegPlanes{.plane = {&byte, &byte, &byte}, .pitch = {4, chroma_pitch, chroma_pitch},
                            .extent = {4, 2}, .chroma = chroma};
  };
  EXPECT_THROW(cuda::jpeg_planes_to_rgb(planes(JpegChroma::half, 2), {&byte, {4, 4}, 12}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(cuda::jpeg_planes_to_rgb(planes(JpegChroma::full, 3), {&byte, {4, 2}, 12}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(cuda::jpeg_planes_to_rgb(planes(JpegChroma::half, 2), {&byte, {4, 2}, 11}, nullptr),
               std::invalid_argument);
  cuda::JpegPlanes missing = planes(JpegChroma::half_width, 2);
  missing.plane[2] = nullptr;
  EXPECT_THROW(cuda::jpeg_planes_to_rgb(missing, {&byte, {4, 2}, 12}, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace imgpipe::testing
