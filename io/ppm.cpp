#include "ppm.hpp"

#include "file_bytes.hpp"

#include <cstring>
#include <string>

namespace imgpipe::io {
namespace {

// Reads the header fields one by one, skipping whitespace and comments between them.
class HeaderReader {
 public:
  explicit HeaderReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::size_t position() const { return pos_; }
  bool at_end() const { return pos_ >= bytes_.size(); }

  static bool is_whitespace(std::uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  }

  void skip_whitespace_and_comments() {
    while (!at_end()) {
      if (is_whitespace(bytes_[pos_])) {
        ++pos_;
      } else if (bytes_[pos_] == '#') {
        while (!at_end() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
      } else {
        return;
      }
    }
  }

  // One whitespace byte ends the header; a comment there ends with its newline (as libnetpbm reads it).
  void skip_raster_delimiter() {
    if (at_end()) throw IoError("truncated header: the file ends after the maxval");
    if (bytes_[pos_] == '#') {
      while (!at_end() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
      if (at_end()) throw IoError("truncated header: the comment after the maxval runs to the end of the file");
    }
    ++pos_;  // number() saw to it that this is whitespace
  }

  // A positive decimal field; `name` is for messages.
  std::uint64_t number(const char* name) {
    skip_whitespace_and_comments();
    if (at_end()) throw IoError(std::string("truncated header: the file ends before the ") + name);
    if (bytes_[pos_] < '0' || bytes_[pos_] > '9') {
      throw IoError(std::string("bad header: expected the ") + name + " as a decimal number, found " +
                    describe(bytes_[pos_]));
    }
    std::uint64_t value = 0;
    while (!at_end() && bytes_[pos_] >= '0' && bytes_[pos_] <= '9') {
      value = value * 10 + (bytes_[pos_++] - '0');
      if (value > kLargestField) throw IoError(std::string("bad header: the ") + name + " is absurdly large");
    }
    if (!at_end() && !is_whitespace(bytes_[pos_]) && bytes_[pos_] != '#') {
      throw IoError(std::string("bad header: the ") + name + " is followed by " + describe(bytes_[pos_]));
    }
    return value;
  }

  static std::string describe(std::uint8_t c) {
    if (c >= 0x21 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    return "byte " + std::to_string(c);
  }

 private:
  // Far above any real width, height or maxval, low enough that the products below cannot overflow.
  static constexpr std::uint64_t kLargestField = 1'000'000'000;
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

std::string describe_magic(std::span<const std::uint8_t> bytes) {
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '7') {
    static const char* const kKinds[] = {"P1 (ASCII bitmap)", "P2 (ASCII graymap)", "P3 (ASCII pixmap)",
                                         "P4 (binary bitmap)", "P5 (binary graymap)", "P6", "P7 (PAM)"};
    return kKinds[bytes[1] - '1'];
  }
  return "no netpbm magic number";
}

}  // namespace

std::string pixel_limit_reason(std::uint64_t width, std::uint64_t height, std::uint64_t max_pixels) {
  // width and height come from headers of at most 32 bits each, so the product fits.
  return "image of " + std::to_string(width) + "x" + std::to_string(height) + " (" + std::to_string(width * height) +
         " pixels) exceeds the limit of " + std::to_string(max_pixels) + " pixels";
}

void decode_ppm_into(std::span<const std::uint8_t> bytes, const FrameAllocator& allocate, std::uint64_t max_pixels) {
  if (bytes.empty()) throw IoError("empty file");
  if (bytes.size() < 2 || bytes[0] != 'P' || bytes[1] != '6') {
    throw IoError("not a binary PPM: found " + describe_magic(bytes) + "; imgpipe reads P6 with maxval 255");
  }
  HeaderReader header(bytes.subspan(2));
  const std::uint64_t width = header.number("width");
  const std::uint64_t height = header.number("height");
  const std::uint64_t maxval = header.number("maxval");
  if (width == 0 || height == 0) {
    throw IoError("bad header: size " + std::to_string(width) + "x" + std::to_string(height) + " has no pixels");
  }
  if (width * height > max_pixels) throw PixelLimitError(pixel_limit_reason(width, height, max_pixels));
  if (maxval != 255) {
    const std::string reason =
        "maxval " + std::to_string(maxval) + " is not supported; imgpipe reads 8-bit PPM (maxval 255)";
    if (maxval >= 1 && maxval <= 65535) throw PpmDepthError(reason);
    throw IoError(reason);
  }
  header.skip_raster_delimiter();

  const Size size{static_cast<int>(width), static_cast<int>(height)};
  const std::size_t raster_start = 2 + header.position();
  const std::size_t available = bytes.size() - raster_start;
  if (available < size.rgb_bytes()) {
    throw IoError("truncated raster: " + to_string(size) + " needs " + std::to_string(size.rgb_bytes()) +
                  " bytes of pixels, the file has " + std::to_string(available));
  }
  std::memcpy(allocate(size).data, bytes.data() + raster_start, size.rgb_bytes());
}

Image decode_ppm(std::span<const std::uint8_t> bytes, std::uint64_t max_pixels) {
  Image image;
  decode_ppm_into(
      bytes,
      [&image](Size size) {
        image = Image(size);
        return image.view();
      },
      max_pixels);
  return image;
}

std::vector<std::uint8_t> encode_ppm(ConstFrameView image) {
  if (image.size.pixels() == 0) throw IoError("cannot encode an empty image as PPM");
  const std::string header =
      "P6\n" + std::to_string(image.size.width) + " " + std::to_string(image.size.height) + "\n255\n";
  std::vector<std::uint8_t> bytes(header.begin(), header.end());
  bytes.insert(bytes.end(), image.data, image.data + image.size.rgb_bytes());
  return bytes;
}

Image read_ppm(const std::filesystem::path& path, std::uint64_t max_pixels) {
  const std::vector<std::uint8_t> bytes = read_file(path, max_image_file_bytes(max_pixels));
  try {
    return decode_ppm(bytes, max_pixels);
  } catch (const PixelLimitError& e) {
    throw PixelLimitError(path, e.reason());
  } catch (const IoError& e) {
    throw IoError(path, e.reason());
  }
}

void write_ppm(const std::filesystem::path& path, const Image& image) {
  try {
    write_file_atomically(path, encode_ppm(image));
  } catch (const IoError& e) {
    if (!e.path().empty()) throw;
    throw IoError(path, e.reason());
  }
}

}  // namespace imgpipe::io
