// fuzz_image_header: imgpipe::io::read_image_header on arbitrary bytes, and on a JPEG whose first APP1 segment
// holds them.
// Expected failure: none; it never throws.
// Properties:
//   - every declared size is within 32 bits a side, and only a recognised format declares one;
//   - an EXIF orientation that is not marked ambiguous is the one OpenCV's imread would apply: the input, put
//     after "Exif\0\0" in a JPEG's first APP1 segment, read by opencv_orientation below, a transcription of
//     OpenCV's ExifReader (modules/imgcodecs/src/exif.cpp: any read out of bounds ends the walk, and the
//     entries read before it stay, so an Orientation entry seen first still counts).
#include "fuzz_check.hpp"
#include "image_header.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace imgpipe;
using imgpipe::fuzz::fail;

constexpr const char* kTarget = "fuzz_image_header";

struct OutOfBounds {};

// What OpenCV's ExifReader makes of `tiff`: the first Orientation entry's value, or 1 (no turn).
std::uint16_t opencv_orientation(const std::vector<std::uint8_t>& tiff) {
  const std::size_t size = tiff.size();
  const bool intel = size >= 1 && !(size > 1 && tiff[0] != tiff[1]) && tiff[0] == 'I';
  auto u16 = [&](std::size_t at) -> std::uint32_t {
    if (at + 1 >= size) throw OutOfBounds{};
    return intel ? tiff[at] | (tiff[at + 1] << 8) : (tiff[at] << 8) | tiff[at + 1];
  };
  auto u32 = [&](std::size_t at) -> std::uint32_t {
    if (at + 3 >= size) throw OutOfBounds{};
    return intel ? u16(at) | (u16(at + 2) << 16) : (u16(at) << 16) | u16(at + 2);
  };
  try {
    if (u16(2) != 0x2A) return 1;
    std::size_t offset = u32(4);
    const std::size_t entries = u16(offset);
    offset += 2;
    for (std::size_t i = 0; i < entries; ++i, offset += 12) {
      switch (u16(offset)) {
        case 0x0112: return static_cast<std::uint16_t>(u16(offset + 8));
        case 0x010E: case 0x010F: case 0x0110: case 0x0131: case 0x0132: case 0x8298: {  // getString
          const std::size_t length = u32(offset + 4);
          const std::size_t data = length > 4 ? u32(offset + 8) : 8;
          if (data > size || data + length > size) throw OutOfBounds{};
          break;
        }
        case 0x011A: case 0x011B: {  // getResolution: one rational at an offset
          const std::size_t rational = u32(offset + 8);
          u32(rational);
          u32(rational + 4);
          break;
        }
        case 0x0128: case 0x0213: u16(offset + 8); break;
        default: break;  // the other tags OpenCV reads lie after 0x0112, where imgpipe calls them ambiguous
      }
    }
  } catch (const OutOfBounds&) {
  }
  return 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Own the bytes in an exactly sized heap buffer, so ASan sees any read past the end.
  const std::vector<std::uint8_t> bytes(data, data + size);
  const io::ImageHeader header = io::read_image_header(bytes);
  if (header.size && (header.size->width > 0xFFFFFFFFu || header.size->height > 0xFFFFFFFFu)) {
    fail(kTarget, "a side longer than 32 bits");
  }
  if (header.size && header.format.empty()) fail(kTarget, "a size declared by no format");

  // The same bytes as the TIFF block of a JPEG's first APP1 segment (which holds at most 65533 bytes).
  const std::size_t kept = std::min<std::size_t>(size, 65000);
  const std::vector<std::uint8_t> tiff(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(kept));
  std::vector<std::uint8_t> jpeg = {0xFF, 0xD8, 0xFF, 0xE1};
  const std::size_t length = 2 + 6 + tiff.size();
  jpeg.push_back(static_cast<std::uint8_t>(length >> 8));
  jpeg.push_back(static_cast<std::uint8_t>(length & 0xFF));
  for (char c : std::string("Exif\0\0", 6)) jpeg.push_back(static_cast<std::uint8_t>(c));
  jpeg.insert(jpeg.end(), tiff.begin(), tiff.end());
  jpeg.insert(jpeg.end(), {0xFF, 0xD9});
  const io::ImageHeader exif = io::read_image_header(jpeg);
  if (exif.format != "JPEG") fail(kTarget, "the wrapping JPEG was not recognised");
  const std::uint16_t expected = opencv_orientation(tiff);
  if (!exif.orientation.ambiguous && exif.orientation.value != expected) {
    fail(kTarget, "orientation " + std::to_string(exif.orientation.value) + ", OpenCV's " + std::to_string(expected));
  }
  return 0;
}
