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
#include <string>
#include <vector>

namespace imgpipe::io {

// The default pixel limit: images above it are refused from their header, before anything is allocated
// for them: 2^28 pixels (768 MiB of RGB), e.g. 16384 x 16384. Every reader takes the limit as a parameter
// (imgpipe's --max-pixels / IMGPIPE_MAX_PIXELS); this is what it defaults to.
constexpr std::uint64_t kDefaultMaxPixels = std::uint64_t{1} << 28;

// The message every reader gives when a header declares more than `max_pixels` (PixelLimitError).
std::string pixel_limit_reason(std::uint64_t width, std::uint64_t height, std::uint64_t max_pixels);

// A binary PPM of another depth than 8 bits (a valid maxval other than 255, such as 65535 for 16-bit samples),
// within the pixel limit: imgpipe's own reader takes maxval 255 only, OpenCV's the others.
class PpmDepthError : public IoError {
 public:
  using IoError::IoError;
};

// Throw IoError naming the path (for files) and the reason: unsupported variant, bad header, truncated raster;
// PixelLimitError when the header declares more than `max_pixels` pixels; PpmDepthError for another depth.
Image read_ppm(const std::filesystem::path& path, std::uint64_t max_pixels = kDefaultMaxPixels);
Image decode_ppm(std::span<const std::uint8_t> bytes, std::uint64_t max_pixels = kDefaultMaxPixels);
// The raster goes straight into allocate(size); nothing is allocated before the header has been checked.
void decode_ppm_into(std::span<const std::uint8_t> bytes, const FrameAllocator& allocate,
                     std::uint64_t max_pixels = kDefaultMaxPixels);

// write_ppm goes through a temporary name and a rename, like every imgpipe writer.
void write_ppm(const std::filesystem::path& path, const Image& image);
std::vector<std::uint8_t> encode_ppm(ConstFrameView image);
inline std::vector<std::uint8_t> encode_ppm(const Image& image) { return encode_ppm(image.view()); }

}  // namespace imgpipe::io
