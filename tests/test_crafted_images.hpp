// Image files crafted byte by byte: headers that declare whatever size a test needs, in a file of a few dozen
// bytes (decompression bombs as far as any header reader can tell), and EXIF segments put into JPEG files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace imgpipe::testing {

inline void put_be32(std::vector<std::uint8_t>& b, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<std::uint8_t>(v >> shift));
}

inline std::uint32_t crc32(const std::vector<std::uint8_t>& data, std::size_t from) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = from; i < data.size(); ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline void png_chunk(std::vector<std::uint8_t>& png, const char* type, const std::vector<std::uint8_t>& data) {
  put_be32(png, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = png.size();
  png.insert(png.end(), type, type + 4);
  png.insert(png.end(), data.begin(), data.end());
  put_be32(png, crc32(png, start));
}

// A well-formed PNG (valid CRCs, IEND) whose IHDR declares width x height, 8-bit RGB; its IDAT holds one
// tiny zlib block, so the file is 70 bytes whatever it declares. libpng would accept the header.
inline std::vector<std::uint8_t> declared_png(std::uint32_t width, std::uint32_t height) {
  std::vector<std::uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<std::uint8_t> ihdr;
  put_be32(ihdr, width);
  put_be32(ihdr, height);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8-bit RGB, deflate, no filter, no interlace
  png_chunk(png, "IHDR", ihdr);
  png_chunk(png, "IDAT", {0x78, 0x01, 0x01, 0x01, 0x00, 0xFE, 0xFF, 0x00, 0x00, 0x01, 0x00, 0x01});
  png_chunk(png, "IEND", {});
  return png;
}

// A baseline JPEG's marker structure (SOI, APP0, SOF0 declaring width x height, SOS with a few bytes of
// scan data, EOI).
inline std::vector<std::uint8_t> declared_jpeg(std::uint16_t width, std::uint16_t height) {
  std::vector<std::uint8_t> jpeg = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1,
                                    0,    0};
  jpeg.insert(jpeg.end(), {0xFF, 0xC0, 0x00, 0x11, 8, static_cast<std::uint8_t>(height >> 8),
                           static_cast<std::uint8_t>(height), static_cast<std::uint8_t>(width >> 8),
                           static_cast<std::uint8_t>(width), 3, 1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1});
  jpeg.insert(jpeg.end(), {0xFF, 0xDA, 0x00, 0x0C, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 0x3F, 0, 0x12, 0x34, 0xFF, 0x00,
                           0xFF, 0xD9});
  return jpeg;
}

// EXIF blocks for JPEG files, for the orientation tests.
struct IfdEntry {
  std::uint16_t tag, type;
  std::uint32_t count, value;
};

// `v` as `bytes` bytes, little-endian (Intel's order) or big-endian (Motorola's).
inline void put_ordered(std::vector<std::uint8_t>& b, std::uint32_t v, int bytes, bool intel) {
  for (int i = 0; i < bytes; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * (intel ? i : bytes - 1 - i))));
}

// A TIFF block with one IFD at offset 8 holding `entries` (SHORT values in the entry's first two bytes).
inline std::vector<std::uint8_t> tiff(bool intel, const std::vector<IfdEntry>& entries,
                                      std::uint32_t ifd_offset = 8) {
  std::vector<std::uint8_t> b;
  b.reserve(18 + 12 * entries.size());
  b.assign(2, intel ? 'I' : 'M');
  put_ordered(b, 42, 2, intel);
  put_ordered(b, ifd_offset, 4, intel);
  put_ordered(b, static_cast<std::uint32_t>(entries.size()), 2, intel);
  for (const IfdEntry& e : entries) {
    put_ordered(b, e.tag, 2, intel);
    put_ordered(b, e.type, 2, intel);
    put_ordered(b, e.count, 4, intel);
    if (e.type == 3 && e.count == 1) {
      put_ordered(b, e.value, 2, intel);
      put_ordered(b, 0, 2, intel);
    } else {
      put_ordered(b, e.value, 4, intel);
    }
  }
  put_ordered(b, 0, 4, intel);
  return b;
}

// `jpeg` with an APP1 segment holding `payload` right after its start-of-image marker.
inline std::vector<std::uint8_t> with_app1(const std::vector<std::uint8_t>& jpeg,
                                           const std::vector<std::uint8_t>& payload) {
  const std::size_t length = payload.size() + 2;
  const std::uint8_t marker[] = {0xFF, 0xE1, static_cast<std::uint8_t>(length >> 8),
                                 static_cast<std::uint8_t>(length & 0xFF)};
  std::vector<std::uint8_t> out(jpeg.size() + 2 + length);
  auto at = std::copy(jpeg.begin(), jpeg.begin() + 2, out.begin());
  at = std::copy(std::begin(marker), std::end(marker), at);
  at = std::copy(payload.begin(), payload.end(), at);
  std::copy(jpeg.begin() + 2, jpeg.end(), at);
  return out;
}

// `png` with an eXIf chunk holding `tiff_block` right after its IHDR chunk.
inline std::vector<std::uint8_t> with_exif_chunk(const std::vector<std::uint8_t>& png,
                                                 const std::vector<std::uint8_t>& tiff_block) {
  constexpr std::size_t kAfterIhdr = 8 + 12 + 13;
  std::vector<std::uint8_t> out(png.begin(), png.begin() + kAfterIhdr);
  png_chunk(out, "eXIf", tiff_block);
  out.insert(out.end(), png.begin() + kAfterIhdr, png.end());
  return out;
}

// An APP1 payload: "Exif\0\0", then the TIFF block.
inline std::vector<std::uint8_t> exif(const std::vector<std::uint8_t>& tiff_block) {
  const char header[] = "Exif\0";  // six bytes with the terminator
  std::vector<std::uint8_t> payload(sizeof header + tiff_block.size());
  std::copy(tiff_block.begin(), tiff_block.end(), std::copy(std::begin(header), std::end(header), payload.begin()));
  return payload;
}

inline std::string as_string(const std::vector<std::uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

}  // namespace imgpipe::testing
