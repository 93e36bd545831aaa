#include "image_header.hpp"

#include <algorithm>
#include <initializer_list>

namespace imgpipe::io {
namespace {

using Bytes = std::span<const std::uint8_t>;

bool starts_with(Bytes bytes, std::size_t at, std::initializer_list<std::uint8_t> prefix) {
  return bytes.size() >= at + prefix.size() && std::equal(prefix.begin(), prefix.end(), bytes.begin() + at);
}

std::uint32_t be16(Bytes b, std::size_t at) { return (std::uint32_t{b[at]} << 8) | b[at + 1]; }
std::uint32_t be32(Bytes b, std::size_t at) { return (be16(b, at) << 16) | be16(b, at + 2); }
std::uint32_t le16(Bytes b, std::size_t at) { return std::uint32_t{b[at]} | (std::uint32_t{b[at + 1]} << 8); }
std::uint32_t le24(Bytes b, std::size_t at) { return le16(b, at) | (std::uint32_t{b[at + 2]} << 16); }
std::uint32_t le32(Bytes b, std::size_t at) { return le16(b, at) | (le16(b, at + 2) << 16); }

std::string chunk_name(Bytes b, std::size_t at) {
  std::string name;
  for (std::size_t i = at; i < at + 4; ++i) name += (b[i] >= 0x20 && b[i] < 0x7f) ? static_cast<char>(b[i]) : '?';
  return name;
}

bool is_chunk_type(Bytes b, std::size_t at) {
  return std::all_of(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + 4),
                     [](std::uint8_t c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); });
}

// Signature, IHDR (width, height), then chunk after chunk until IEND; a file that ends first is truncated.
// A chunk structure that is not PNG's (a corrupt file rather than a short one) is left to the decoder.
void read_png(Bytes b, ImageHeader& header) {
  header.format = "PNG";
  if (b.size() < 24 || chunk_name(b, 12) != "IHDR") return;
  header.size = DeclaredSize{be32(b, 16), be32(b, 20)};
  constexpr std::uint8_t kGrayAlpha = 4, kRgbAlpha = 6;
  header.transparency = b.size() > 25 && (b[25] == kGrayAlpha || b[25] == kRgbAlpha);
  std::size_t pos = 8;
  while (pos + 8 <= b.size()) {
    const std::uint64_t length = be32(b, pos);
    if (length > 0x7FFFFFFFu || !is_chunk_type(b, pos + 4)) return;
    const std::string name = chunk_name(b, pos + 4);
    if (pos + 12 + length > b.size()) {
      header.truncated = "truncated PNG: the file ends inside its " + name + " chunk (" + std::to_string(b.size()) +
                         " bytes)";
      return;
    }
    if (name == "IEND") return;
    if (name == "tRNS") header.transparency = true;
    pos += 12 + length;
  }
  header.truncated = "truncated PNG: the file ends before its IEND chunk (" + std::to_string(b.size()) + " bytes)";
}

bool is_sof(std::uint8_t marker) {
  // SOF0..SOF15, except DHT (C4), JPG (C8) and DAC (CC), which share the range.
  return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

// OpenCV's reader, entry by entry up to the first Orientation entry; where it would read out of bounds first,
// or reads the TIFF in an order that is neither Intel's nor Motorola's, the answer is ambiguous.
ExifOrientation read_exif_orientation(Bytes tiff) {
  const std::size_t size = tiff.size();
  if (size < 8) return {};
  const bool intel = tiff[0] == 'I' && tiff[1] == 'I';
  const bool motorola = tiff[0] == 'M' && tiff[1] == 'M';
  auto u16 = [&](std::size_t at) { return intel ? le16(tiff, at) : be16(tiff, at); };
  auto u32 = [&](std::size_t at) { return intel ? le32(tiff, at) : be32(tiff, at); };
  if (u16(2) != 42) return {};  // not TIFF: no tags
  if (!intel && !motorola) return {.ambiguous = true};
  const std::size_t ifd = u32(4);
  if (ifd >= size || size - ifd < 2) return {};
  const std::size_t entries = u16(ifd);
  for (std::size_t i = 0; i < entries; ++i) {
    const std::size_t at = ifd + 2 + 12 * i;
    if (at + 12 > size) return {.ambiguous = true};
    const std::uint32_t tag = u16(at);
    switch (tag) {
      case 0x0112: return {.value = static_cast<std::uint16_t>(u16(at + 8))};
      case 0x010E: case 0x010F: case 0x0110: case 0x0131: case 0x0132: case 0x8298: {  // strings
        const std::uint64_t length = u32(at + 4);
        const std::uint64_t offset = length > 4 ? u32(at + 8) : 8;
        if (offset + length > size) return {.ambiguous = true};
        break;
      }
      case 0x011A: case 0x011B: {  // X and Y resolution: one rational
        if (std::uint64_t{u32(at + 8)} + 8 > size) return {.ambiguous = true};
        break;
      }
      case 0x013E: case 0x013F: case 0x0211: case 0x0214:  // several rationals; after 0x0112 in a sorted IFD
        return {.ambiguous = true};
      default: break;
    }
  }
  return {};
}

// Segment after segment (skipping entropy-coded data after each SOS) until the end-of-image marker.
void read_jpeg(Bytes b, ImageHeader& header) {
  header.format = "JPEG";
  const std::string ends_early = "truncated JPEG: the file ends before its end-of-image marker (" +
                                 std::to_string(b.size()) + " bytes)";
  std::size_t pos = 2;
  bool seen_scan = false, seen_app1 = false;
  while (true) {
    // A marker is 0xFF (any number of fill bytes) and a code; stray bytes before it are skipped as libjpeg does.
    while (pos < b.size() && b[pos] != 0xFF) ++pos;
    while (pos < b.size() && b[pos] == 0xFF) ++pos;
    if (pos >= b.size()) {
      header.truncated = ends_early;
      return;
    }
    const std::uint8_t marker = b[pos++];
    if (marker == 0xD9) return;                                           // EOI: whole
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no length field
    if (pos + 2 > b.size()) {
      header.truncated = ends_early;
      return;
    }
    const std::size_t length = be16(b, pos);
    if (length < 2) return;  // not a JPEG segment: corrupt rather than short; the decoder says so
    if (pos + length > b.size()) {
      header.truncated = ends_early;
      return;
    }
    if (marker == 0xE1 && !seen_scan && !seen_app1) {
      seen_app1 = true;
      // The segment's data after its length field, less the six bytes of "Exif\0\0" (not checked, as in OpenCV).
      if (length - 2 > 6) header.orientation = read_exif_orientation(b.subspan(pos + 2 + 6, length - 2 - 6));
    }
    if (is_sof(marker) && length >= 7 && !header.size) {
      const std::uint32_t height = be16(b, pos + 3), width = be16(b, pos + 5);
      if (height > 0) header.size = DeclaredSize{width, height};  // 0: the height comes later (DNL); unknown here
    }
    pos += length;
    if (marker == 0xDA) {
      seen_scan = true;
      // Entropy-coded data runs to the next marker that is not a stuffed 0xFF00 or a restart marker.
      while (pos + 1 < b.size()) {
        if (b[pos] == 0xFF && b[pos + 1] != 0x00 && b[pos + 1] != 0xFF && !(b[pos + 1] >= 0xD0 && b[pos + 1] <= 0xD7)) {
          break;
        }
        ++pos;
      }
      if (pos + 1 >= b.size()) {
        header.truncated = ends_early;
        return;
      }
    }
  }
}

void read_bmp(Bytes b, ImageHeader& header) {
  header.format = "BMP";
  if (b.size() < 26) return;
  const std::uint32_t dib = le32(b, 14);
  if (dib == 12) {  // BITMAPCOREHEADER: 16-bit sizes
    header.size = DeclaredSize{le16(b, 18), le16(b, 20)};
    return;
  }
  const auto width = static_cast<std::int32_t>(le32(b, 18));
  const auto height = static_cast<std::int32_t>(le32(b, 22));  // negative: rows top-down
  auto magnitude = [](std::int32_t v) { return static_cast<std::uint64_t>(v < 0 ? -std::int64_t{v} : v); };
  header.size = DeclaredSize{magnitude(width), magnitude(height)};
}

void read_webp(Bytes b, ImageHeader& header) {
  header.format = "WebP";
  if (b.size() < 30) return;
  const std::string chunk = chunk_name(b, 12);
  if (chunk == "VP8X") {
    constexpr std::uint8_t kAnimationFlag = 0x02;
    header.animated = (b[20] & kAnimationFlag) != 0;
    header.size = DeclaredSize{std::uint64_t{le24(b, 24)} + 1, std::uint64_t{le24(b, 27)} + 1};
  } else if (chunk == "VP8L" && b[20] == 0x2F) {
    const std::uint32_t bits = le32(b, 21);
    header.size = DeclaredSize{(bits & 0x3FFF) + 1u, ((bits >> 14) & 0x3FFF) + 1u};
  } else if (chunk == "VP8 " && starts_with(b, 23, {0x9D, 0x01, 0x2A})) {
    header.size = DeclaredSize{le16(b, 26) & 0x3FFFu, le16(b, 28) & 0x3FFFu};
  }
}

// Classic TIFF: the first IFD's ImageWidth (256) and ImageLength (257), SHORT or LONG.
void read_tiff(Bytes b, ImageHeader& header) {
  header.format = "TIFF";
  const bool little = b[0] == 'I';
  auto u16 = [&](std::size_t at) { return little ? le16(b, at) : be16(b, at); };
  auto u32 = [&](std::size_t at) { return little ? le32(b, at) : be32(b, at); };
  if (b.size() < 8) return;
  const std::size_t ifd = u32(4);
  if (ifd + 2 > b.size()) return;
  const std::size_t entries = u16(ifd);
  std::optional<std::uint64_t> width, height;
  for (std::size_t i = 0; i < entries; ++i) {
    const std::size_t at = ifd + 2 + 12 * i;
    if (at + 12 > b.size()) break;
    const std::uint32_t tag = u16(at), type = u16(at + 2), count = u32(at + 4);
    if ((tag != 256 && tag != 257) || count != 1 || (type != 3 && type != 4)) continue;
    const std::uint64_t value = type == 3 ? u16(at + 8) : u32(at + 8);
    (tag == 256 ? width : height) = value;
  }
  if (width && height) header.size = DeclaredSize{*width, *height};
}

}  // namespace

ImageHeader read_image_header(std::span<const std::uint8_t> bytes) {
  ImageHeader header;
  if (starts_with(bytes, 0, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'})) {
    read_png(bytes, header);
  } else if (starts_with(bytes, 0, {0xFF, 0xD8})) {
    read_jpeg(bytes, header);
  } else if (starts_with(bytes, 0, {'B', 'M'})) {
    read_bmp(bytes, header);
  } else if (starts_with(bytes, 0, {'R', 'I', 'F', 'F'}) && starts_with(bytes, 8, {'W', 'E', 'B', 'P'})) {
    read_webp(bytes, header);
  } else if (starts_with(bytes, 0, {'I', 'I', 42, 0}) || starts_with(bytes, 0, {'M', 'M', 0, 42})) {
    read_tiff(bytes, header);
  }
  return header;
}

}  // namespace imgpipe::io
