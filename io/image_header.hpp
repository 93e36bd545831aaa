// What an image file's header declares, read by imgpipe itself without decoding anything: enough to refuse a
// decompression bomb before a decoder allocates for it, and to tell a truncated JPEG or PNG from a whole one
// (libjpeg decodes a truncated JPEG "successfully", filling the missing rows with grey).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace imgpipe::io {

struct DeclaredSize {
  std::uint64_t width = 0;
  std::uint64_t height = 0;
  std::uint64_t pixels() const { return width * height; }  // both fit 32 bits in every format read here
};

struct ImageHeader {
  std::string format;                // "PNG", "JPEG", "BMP", "WebP", "TIFF", or "" when not recognised
  std::optional<DeclaredSize> size;  // what the header declares; nullopt when it cannot be read here
  std::string truncated;             // why the file ends early (JPEG, PNG), or "" when it is whole / not checked
};

// Reads PNG (IHDR, then every chunk up to IEND), JPEG (every segment up to the end-of-image marker, the frame
// header for the size), BMP, WebP (VP8, VP8L, VP8X) and classic TIFF (the first image's ImageWidth and
// ImageLength). Never throws and never allocates in proportion to the declared size; a header it cannot read
// gives nullopt and is left to the decoder to refuse.
ImageHeader read_image_header(std::span<const std::uint8_t> bytes);

}  // namespace imgpipe::io
