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

// How a JPEG's EXIF says to turn it upright, read by the rules of OpenCV's imread: the first APP1 segment before
// the first scan, taken as TIFF after its six-byte "Exif\0\0" header, and the first Orientation entry (0x0112) of
// its first IFD. A segment that is not TIFF, or an IFD without the entry, means no turn.
struct ExifOrientation {
  std::uint16_t value = 1;  // 1..8 as EXIF defines them; imread turns nothing for any other value
  // The IFD is malformed before its Orientation entry (an entry or the data it points to out of bounds, an
  // unusual byte order): OpenCV's reader resolves such cases by rules of its own, so only its decoder can say.
  bool ambiguous = false;
};

struct ImageHeader {
  std::string format;                // "PNG", "JPEG", "BMP", "WebP", "TIFF", or "" when not recognised
  std::optional<DeclaredSize> size;  // what the header declares; nullopt when it cannot be read here
  std::string truncated;             // why the file ends early (JPEG, PNG), or "" when it is whole / not checked
  ExifOrientation orientation;       // JPEG only
  // PNG only: an alpha channel (colour type 4 or 6) or a tRNS chunk, so that some pixels may be transparent.
  bool transparency = false;
  bool animated = false;  // WebP only: its VP8X header says it holds an animation
};

// Reads PNG (IHDR, then every chunk up to IEND), JPEG (every segment up to the end-of-image marker, the frame
// header for the size, the EXIF orientation), BMP, WebP (VP8, VP8L, VP8X) and classic TIFF (the first image's
// ImageWidth and ImageLength). Never throws and never allocates in proportion to the declared size; a header it
// cannot read gives nullopt and is left to the decoder to refuse.
ImageHeader read_image_header(std::span<const std::uint8_t> bytes);

}  // namespace imgpipe::io
