// Image files in any format imgpipe knows, as 8-bit RGB. PPM is built in; the rest (PNG, JPEG, BMP, TIFF,
// WebP) go through OpenCV's imgcodecs when the build has OpenCV, and otherwise fail with a message that says so.
#pragma once

#include "file_bytes.hpp"
#include "image.hpp"
#include "io_error.hpp"
#include "ppm.hpp"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace imgpipe::io {

struct ReadResult {
  Image image;
  // Things the conversion to 8-bit RGB lost that the user should hear about (e.g. transparency), once per file.
  std::vector<std::string> warnings;
};

// Any image as 8-bit RGB, as imread reads it: grayscale is copied into three channels, 16-bit samples are scaled
// down, the EXIF orientation of a JPEG or PNG is applied, an alpha channel is dropped (with a warning when any
// pixel is not fully opaque; a PNG with transparency is read unchanged to look, so its orientation is not applied
// and its 16-bit samples are rounded, v / 257). The format comes from the file's contents, not its name.
//
// Refused with IoError naming the path: missing, unreadable, a directory or not a regular file, empty, corrupt,
// truncated (JPEG without its end-of-image marker, PNG without IEND, PPM short of its raster). Refused with
// PixelLimitError when the header declares more than `max_pixels` pixels, checked before any decoder
// allocates (PNG, JPEG, BMP, WebP, TIFF and PPM headers are read by imgpipe itself; any other format OpenCV
// reads is checked once decoded, before `allocate`), and files larger than max_image_file_bytes(max_pixels)
// are refused unread.
ReadResult read_image(const std::filesystem::path& path, std::uint64_t max_pixels = kDefaultMaxPixels);
// The same, decoding straight into allocate(size) (an engine's pinned buffer: no extra host copy);
// returns the warnings.
std::vector<std::string> read_image_into(const std::filesystem::path& path, const FrameAllocator& allocate,
                                         std::uint64_t max_pixels = kDefaultMaxPixels);

// The bytes of the file at `path`, already read, decoded as read_image_into does (errors name `path`).
std::vector<std::string> decode_file_bytes(const std::filesystem::path& path, std::span<const std::uint8_t> bytes,
                                           const FrameAllocator& allocate, std::uint64_t max_pixels);

// An image file's bytes already in memory (an object-store value, a request body), decoded as read_image_into
// does: the format from the contents; `extension` (".jpg", or empty) names it in the message when this build
// cannot read it. IoError without a path for bad bytes.
std::vector<std::string> decode_image(std::span<const std::uint8_t> bytes, const std::string& extension,
                                      const FrameAllocator& allocate, std::uint64_t max_pixels = kDefaultMaxPixels);
// The bytes write_image would write for `extension` (".png", ".jpg", ...).
std::vector<std::uint8_t> encode_image(ConstFrameView image, const std::string& extension, int quality = 95);

// The format comes from the extension (.ppm, .png, .jpg/.jpeg, .bmp, .tif/.tiff, .webp); `quality` (1..100)
// applies to JPEG and WebP. Written to a temporary name in the same folder, then renamed into place; with
// Existing::keep an existing file is never replaced (IoError instead).
void write_image(const std::filesystem::path& path, ConstFrameView image, int quality = 95,
                 Existing existing = Existing::replace);
inline void write_image(const std::filesystem::path& path, const Image& image, int quality = 95,
                        Existing existing = Existing::replace) {
  write_image(path, image.view(), quality, existing);
}

// True when this build reads and writes formats other than PPM.
bool has_opencv_codecs();
// The CPU codecs of this build and the libraries behind them, for `imgpipe backends`.
std::string describe_cpu_codecs();

}  // namespace imgpipe::io
