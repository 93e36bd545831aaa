#include "image_file.hpp"

#include "file_bytes.hpp"
#include "folder.hpp"
#include "image_header.hpp"
#include "ppm.hpp"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <stdexcept>

#ifdef IMGPIPE_HAVE_TURBOJPEG
#include "cpu_jpeg.hpp"
#endif
#ifdef IMGPIPE_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace imgpipe::io {
namespace {

bool starts_with(std::span<const std::uint8_t> bytes, std::initializer_list<std::uint8_t> prefix) {
  return bytes.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), bytes.begin());
}

#ifdef IMGPIPE_HAVE_OPENCV

// OpenCV's message for an exception, without the line break it ends with.
std::string message_of(const cv::Exception& e) {
  std::string message = e.msg;
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

// Decoded samples of any depth and channel count -> 8-bit RGB in allocate(size), noting lost transparency.
std::vector<std::string> to_rgb8(const cv::Mat& decoded, const FrameAllocator& allocate) {
  cv::Mat samples;
  if (decoded.depth() == CV_8U) {
    samples = decoded;
  } else if (decoded.depth() == CV_16U) {
    decoded.convertTo(samples, CV_8U, 1.0 / 257.0);  // 65535 -> 255 exactly
  } else {
    throw IoError(std::string("samples of type ") + cv::depthToString(decoded.depth()) +
                  " are not supported; imgpipe reads 8- and 16-bit images");
  }

  std::vector<std::string> warnings;
  cv::Mat rgb(samples.rows, samples.cols, CV_8UC3, allocate(Size{samples.cols, samples.rows}).data);
  const int channels = samples.channels();
  if (channels == 2 || channels == 4) {
    double min_alpha = 0;
    cv::Mat alpha;
    cv::extractChannel(samples, alpha, channels - 1);
    cv::minMaxLoc(alpha, &min_alpha);
    if (min_alpha < 255) {
      warnings.push_back("has transparent pixels; the alpha channel was dropped (imgpipe processes RGB)");
    }
  }
  switch (channels) {
    case 1: cv::cvtColor(samples, rgb, cv::COLOR_GRAY2RGB); break;
    case 2: {
      cv::Mat gray;
      cv::extractChannel(samples, gray, 0);
      cv::cvtColor(gray, rgb, cv::COLOR_GRAY2RGB);
      break;
    }
    case 3: cv::cvtColor(samples, rgb, cv::COLOR_BGR2RGB); break;
    case 4: cv::cvtColor(samples, rgb, cv::COLOR_BGRA2RGB); break;
    default: throw IoError(std::to_string(channels) + " channels per pixel are not supported");
  }
  return warnings;
}

// `transparency`: the file may hold transparent pixels, which are looked for before the alpha channel is dropped.
std::vector<std::string> decode_with_opencv(std::span<const std::uint8_t> bytes, const FrameAllocator& allocate,
                                            std::uint64_t max_pixels, bool transparency) {
  // A file without transparency is read as imread reads it, as colour, which also applies an EXIF orientation
  // (JPEG, PNG) and takes 16-bit samples to 8 bits as its decoder does (PNG keeps the high byte). A file that may
  // have it (any PNG with it, and the formats whose headers imgpipe does not read for it) is read unchanged, so
  // that transparent pixels are seen before the alpha channel is dropped.
  const cv::Mat encoded(1, static_cast<int>(bytes.size()), CV_8U, const_cast<std::uint8_t*>(bytes.data()));
  cv::Mat decoded;
  try {
    decoded = cv::imdecode(encoded, transparency ? cv::IMREAD_UNCHANGED : cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    throw IoError("OpenCV could not decode it: " + message_of(e));
  }
  if (decoded.empty()) throw IoError("not a decodable image (corrupt, truncated, or a format OpenCV does not read)");
  // A format whose header imgpipe does not read itself is checked once decoded, before the frame is allocated.
  const std::uint64_t pixels = static_cast<std::uint64_t>(decoded.cols) * static_cast<std::uint64_t>(decoded.rows);
  if (pixels > max_pixels) {
    throw PixelLimitError(pixel_limit_reason(static_cast<std::uint64_t>(decoded.cols),
                                             static_cast<std::uint64_t>(decoded.rows), max_pixels));
  }
  return to_rgb8(decoded, allocate);
}

std::vector<std::uint8_t> encode_with_opencv(ConstFrameView image, const std::string& extension, int quality) {
  constexpr int kWebpLargestSide = 16383;  // the format's 14-bit width and height fields
  if (extension == ".webp" && (image.size.width > kWebpLargestSide || image.size.height > kWebpLargestSide)) {
    throw IoError("WebP holds at most " + std::to_string(kWebpLargestSide) + " pixels a side; this image is " +
                  to_string(image.size));
  }
  const cv::Mat rgb(image.size.height, image.size.width, CV_8UC3, const_cast<std::uint8_t*>(image.data));
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<int> params;
  if (extension == ".jpg" || extension == ".jpeg") params = {cv::IMWRITE_JPEG_QUALITY, quality};
  if (extension == ".webp") params = {cv::IMWRITE_WEBP_QUALITY, quality};
  std::vector<std::uint8_t> bytes;
  try {
    if (!cv::imencode(extension, bgr, bytes, params)) throw IoError("OpenCV could not encode " + extension);
  } catch (const cv::Exception& e) {
    throw IoError("OpenCV could not encode " + extension + ": " + message_of(e));
  }
  return bytes;
}

#else

std::string needs_opencv(const char* verb, const std::string& extension) {
  return std::string(verb) + " " + (extension.empty() ? "files other than PPM" : extension) +
         " needs a build with OpenCV; this build reads and writes PPM only";
}

#endif  // IMGPIPE_HAVE_OPENCV

}  // namespace

std::vector<std::string> decode_image(std::span<const std::uint8_t> bytes, const std::string& extension,
                                      const FrameAllocator& allocate, std::uint64_t max_pixels) {
  if (bytes.empty()) throw IoError("empty file");
  if (starts_with(bytes, {'P', '6'})) {
    try {
      decode_ppm_into(bytes, allocate, max_pixels);
      return {};
    } catch (const PpmDepthError&) {
      // Another depth than 8 bits, within the pixel limit: OpenCV reads it where the build has it, and scales
      // 16-bit samples down as it does a PNG's.
#ifndef IMGPIPE_HAVE_OPENCV
      throw;
#endif
    }
  }
#ifdef IMGPIPE_HAVE_OPENCV
  (void)extension;
  // Before OpenCV sees the file: its own size limit is fixed when the library loads (OPENCV_IO_MAX_IMAGE_PIXELS,
  // default 2^30), so imgpipe's limit is checked here, from the header, before any decoder allocates.
  const ImageHeader header = read_image_header(bytes);
  if (header.size && header.size->pixels() > max_pixels) {
    throw PixelLimitError(pixel_limit_reason(header.size->width, header.size->height, max_pixels) + "; its " +
                          header.format + " header says so, and nothing was decoded");
  }
  if (!header.truncated.empty()) throw IoError(header.truncated);
  if (header.animated) throw IoError("an animated WebP, which OpenCV does not read (imgpipe reads still images)");
#ifdef IMGPIPE_HAVE_TURBOJPEG
  if (starts_with(bytes, {0xFF, 0xD8, 0xFF})) {
    // A frame allocated for TurboJPEG is the one imread decodes into, should TurboJPEG leave the file to it.
    std::optional<FrameView> frame;
    const FrameAllocator allocate_once = [&](Size size) {
      if (!frame) frame = allocate(size);
      if (frame->size != size) {
        throw IoError("OpenCV decodes it as " + to_string(size) + ", libjpeg-turbo as " + to_string(frame->size));
      }
      return *frame;
    };
    const CpuJpegDecode turbo = decode_jpeg_on_cpu(bytes, header.orientation, allocate_once);
    if (turbo.decoded) return {};
    std::vector<std::string> warnings;
    try {
      warnings = decode_with_opencv(bytes, allocate_once, max_pixels, false);
    } catch (const PixelLimitError&) {
      throw;
    } catch (const IoError&) {
      if (turbo.libjpeg_message.empty() || turbo.warning) throw;
      throw IoError("not a decodable image: " + turbo.libjpeg_message);  // libjpeg's reason says more than OpenCV's
    }
    if (turbo.warning) warnings.insert(warnings.begin(), "libjpeg: " + turbo.libjpeg_message + "; decoded anyway");
    return warnings;
  }
#endif
  const bool jpeg_or_png = header.format == "JPEG" || header.format == "PNG";
  return decode_with_opencv(bytes, allocate, max_pixels, !jpeg_or_png || header.transparency);
#else
  // Other netpbm kinds get decode_ppm's own explanation of what it does not read.
  if (starts_with(bytes, {'P'}) || extension == ".ppm") {
    decode_ppm_into(bytes, allocate, max_pixels);
    return {};
  }
  throw IoError(needs_opencv("reading", extension));
#endif
}

std::vector<std::uint8_t> encode_image(ConstFrameView image, const std::string& extension, int quality) {
  if (image.size.pixels() == 0) throw IoError("cannot write an empty image");
  if (!is_image_extension(extension)) {
    throw IoError("unknown image extension '" + extension + "'; imgpipe writes " + image_extensions_text());
  }
  if (extension == ".ppm") return encode_ppm(image);
#ifdef IMGPIPE_HAVE_TURBOJPEG
  if (extension == ".jpg" || extension == ".jpeg") return encode_jpeg_on_cpu(image, quality);
#endif
#ifdef IMGPIPE_HAVE_OPENCV
  return encode_with_opencv(image, extension, quality);
#else
  (void)quality;
  throw IoError(needs_opencv("writing", extension));
#endif
}

std::vector<std::string> read_image_into(const std::filesystem::path& path, const FrameAllocator& allocate,
                                         std::uint64_t max_pixels) {
  return decode_file_bytes(path, read_file(path, max_image_file_bytes(max_pixels)), allocate, max_pixels);
}

std::vector<std::string> decode_file_bytes(const std::filesystem::path& path, std::span<const std::uint8_t> bytes,
                                           const FrameAllocator& allocate, std::uint64_t max_pixels) {
  try {
    return decode_image(bytes, lowercase_extension(path), allocate, max_pixels);
  } catch (const PixelLimitError& e) {
    if (!e.path().empty()) throw;
    throw PixelLimitError(path, e.reason());
  } catch (const IoError& e) {
    if (!e.path().empty()) throw;
    throw IoError(path, e.reason());
  }
}

ReadResult read_image(const std::filesystem::path& path, std::uint64_t max_pixels) {
  ReadResult result;
  result.warnings = read_image_into(
      path,
      [&result](Size size) {
        result.image = Image(size);
        return result.image.view();
      },
      max_pixels);
  return result;
}

void write_image(const std::filesystem::path& path, ConstFrameView image, int quality, Existing existing) {
  if (quality < 1 || quality > 100) throw std::invalid_argument("write_image: quality must be 1..100");
  try {
    write_file_atomically(path, encode_image(image, lowercase_extension(path), quality), existing);
  } catch (const IoError& e) {
    if (!e.path().empty()) throw;
    throw IoError(path, e.reason());
  }
}

bool has_opencv_codecs() {
#ifdef IMGPIPE_HAVE_OPENCV
  return true;
#else
  return false;
#endif
}

std::string describe_cpu_codecs() {
#if defined(IMGPIPE_HAVE_TURBOJPEG)
  return "JPEG through " + cpu_jpeg_library() + " (TurboJPEG), PNG, BMP, TIFF and WebP through OpenCV, and PPM";
#elif defined(IMGPIPE_HAVE_OPENCV)
  return "OpenCV (JPEG, PNG, BMP, TIFF, WebP) and PPM";
#else
  return "PPM only (this build has no OpenCV)";
#endif
}

}  // namespace imgpipe::io
