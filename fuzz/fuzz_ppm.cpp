// fuzz_ppm: imgpipe::io::decode_ppm on arbitrary bytes.
// Expected failure: IoError. Anything else thrown, a sanitizer report or a violated property is a bug.
// Properties on success:
//   - the image is non-empty, within kDefaultMaxPixels, and its pixels are a copy of the bytes it came from
//     (the last width*height*3 bytes of the decoded prefix; the raster is never read past the input);
//   - encode_ppm then decode_ppm gives back exactly the same size and pixels.
#include "fuzz_check.hpp"
#include "ppm.hpp"

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace imgpipe;
using imgpipe::fuzz::fail;

constexpr const char* kTarget = "fuzz_ppm";

bool same_image(const Image& a, const Image& b) {
  return a.size() == b.size() && a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Own the bytes in an exactly sized heap buffer, so ASan sees any read past the end.
  const std::vector<std::uint8_t> bytes(data, data + size);
  Image image;
  try {
    image = io::decode_ppm(std::span<const std::uint8_t>(bytes.data(), bytes.size()));
  } catch (const io::IoError& e) {
    if (e.reason().empty()) fail(kTarget, "IoError without a reason");
    return 0;
  }

  const Size s = image.size();
  if (image.empty() || s.width < 1 || s.height < 1 || s.pixels() > io::kDefaultMaxPixels || image.bytes() != s.rgb_bytes()) {
    fail(kTarget, "decoded an image of " + to_string(s) + " with " + std::to_string(image.bytes()) + " bytes");
  }
  if (image.bytes() > size) fail(kTarget, "decoded more pixel bytes than the input holds");
  // The raster is a contiguous run of the input right after the header: find it by its size.
  bool found = false;
  for (std::size_t start = 0; start + image.bytes() <= size && !found; ++start) {
    found = std::memcmp(bytes.data() + start, image.data(), image.bytes()) == 0;
  }
  if (!found) fail(kTarget, "the decoded pixels are not a run of the input bytes");

  const std::vector<std::uint8_t> encoded = io::encode_ppm(image);
  Image again;
  try {
    again = io::decode_ppm(encoded);
  } catch (const io::IoError& e) {
    fail(kTarget, "encode_ppm output does not decode: " + e.reason());
  }
  if (!same_image(image, again)) fail(kTarget, "encode_ppm then decode_ppm changed the image");
  if (io::encode_ppm(again) != encoded) fail(kTarget, "encode_ppm is not deterministic");
  return 0;
}
