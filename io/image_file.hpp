// Image files in any format imgpipe knows, as 8-bit RGB. PPM is built in; the rest (PNG, JPEG, BMP, TIFF,
// WebP) go through OpenCV's imgcodecs when the build has OpenCV, and otherwise fail with a message that says so.
#pragma once

#include "image.hpp"
#include "io_error.hpp"
#include "ppm.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace imgpipe::io {

struct ReadResult {
  Image image;
  // Things the conversion to 8-bit RGB lost that the user should hear about (e.g. transparency), once per file.
  std::vector<std::string> warnings;
};

// Any image as 8-bit RGB: grayscale is copied into three channels, 16-bit samples are scaled down
// (v / 257), an alpha channel is dropped (with a warning when any pixel is not fully opaque).
// JPEG EXIF orientation is applied. The format comes from the file's contents, not its name.
ReadResult read_image(const std::filesystem::path& path);
// The same, decoding straight into allocate(size) (an engine's pinned buffer: no extra host copy);
// returns the warnings.
std::vector<std::string> read_image_into(const std::filesystem::path& path, const FrameAllocator& allocate);

// The format comes from the extension (.ppm, .png, .jpg/.jpeg, .bmp, .tif/.tiff, .webp); `quality` (1..100)
// applies to JPEG and WebP. Written to a temporary name in the same folder, then renamed into place.
void write_image(const std::filesystem::path& path, ConstFrameView image, int quality = 95);
inline void write_image(const std::filesystem::path& path, const Image& image, int quality = 95) {
  write_image(path, image.view(), quality);
}

// True when this build reads and writes formats other than PPM.
bool has_opencv_codecs();

}  // namespace imgpipe::io
