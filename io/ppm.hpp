// Binary PPM (P6, maxval 255): the one image format imgpipe reads and writes without OpenCV.
// Header per netpbm: "P6", width, height, maxval as ASCII decimals separated by whitespace (blank, tab,
// CR, LF, VT, FF) and '#' comments running to the end of the line; then exactly one whitespace byte, then
// the raster, rows top to bottom, R G B per pixel. Bytes after the raster (a further image) are ignored.
#pragma once

#include "image.hpp"
#include "io_error.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <vector>

namespace imgpipe::io {

// Images above this many pixels are refused from their header, before anything is allocated for them:
// 2^28 pixels (768 MiB of RGB), e.g. 16384 x 16384.
constexpr std::uint64_t kMaxPixels = std::uint64_t{1} << 28;

// Where a decoder puts a frame once it knows its size: memory someone else owns (an engine's pinned slot).
using FrameAllocator = std::function<FrameView(Size)>;

// Throw IoError naming the path (for files) and the reason: unsupported variant, bad header, truncated raster.
Image read_ppm(const std::filesystem::path& path);
Image decode_ppm(std::span<const std::uint8_t> bytes);
// The raster goes straight into allocate(size); nothing is allocated before the header has been checked.
void decode_ppm_into(std::span<const std::uint8_t> bytes, const FrameAllocator& allocate);

// write_ppm goes through a temporary name and a rename, like every imgpipe writer.
void write_ppm(const std::filesystem::path& path, const Image& image);
std::vector<std::uint8_t> encode_ppm(ConstFrameView image);
inline std::vector<std::uint8_t> encode_ppm(const Image& image) { return encode_ppm(image.view()); }

}  // namespace imgpipe::io
