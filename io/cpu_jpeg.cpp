#include "cpu_jpeg.hpp"

#include "io_error.hpp"

#include <jconfig.h>
#include <turbojpeg.h>

#include <memory>
#include <opencv2/core.hpp>

namespace imgpipe::io {
namespace {

struct HandleDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using Handle = std::unique_ptr<void, HandleDeleter>;

struct JpegBufferDeleter {
  void operator()(unsigned char* buffer) const { tjFree(buffer); }
};

// Writes `stored` into `upright` turned as imread's ApplyExifOrientation turns it (orientation 2..8).
void turn_upright(const cv::Mat& stored, cv::Mat& upright, std::uint16_t orientation) {
  switch (orientation) {
    case 2: cv::flip(stored, upright, 1); break;
    case 3: cv::flip(stored, upright, -1); break;
    case 4: cv::flip(stored, upright, 0); break;
    case 5: cv::transpose(stored, upright); break;
    case 6: cv::rotate(stored, upright, cv::ROTATE_90_CLOCKWISE); break;
    case 7: {
      cv::Mat transposed;
      cv::transpose(stored, transposed);
      cv::flip(transposed, upright, -1);
      break;
    }
    case 8: cv::rotate(stored, upright, cv::ROTATE_90_COUNTERCLOCKWISE); break;
  }
}

}  // namespace

CpuJpegDecode decode_jpeg_on_cpu(std::span<const std::uint8_t> jpeg, ExifOrientation orientation,
                                 const FrameAllocator& allocate) {
  if (orientation.ambiguous) return {};
  const Handle handle(tjInitDecompress());
  if (!handle) throw IoError("TurboJPEG could not make a decompressor");
  // Whatever TurboJPEG finds wrong in a header (a warning such as an unknown JFIF revision, sampling factors it
  // has no name for) is left to imread, which may still decode the file; libjpeg's message goes with it.
  auto stopped = [&] {
    return CpuJpegDecode{.decoded = false,
                         .libjpeg_message = tjGetErrorStr2(handle.get()),
                         .warning = tjGetErrorCode(handle.get()) == TJERR_WARNING};
  };
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), jpeg.data(), jpeg.size(), &width, &height, &subsampling, &colorspace) != 0) {
    return stopped();
  }
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) return {};

  // An upright file decodes straight into the caller's buffer; a turned one through a buffer of its own.
  const bool turned = orientation.value >= 2 && orientation.value <= 8;
  cv::Mat stored;
  FrameView frame;
  if (turned) {
    stored.create(height, width, CV_8UC3);
  } else {
    frame = allocate(Size{width, height});
    stored = cv::Mat(height, width, CV_8UC3, frame.data);
  }
  // Stop at the first warning: TurboJPEG 2.1 reports a file with a warning and then an error as a warning, so
  // only a clean decode is trusted here, and a file libjpeg warns about is imread's to decode.
  if (tjDecompress2(handle.get(), jpeg.data(), jpeg.size(), stored.data, width, 0, height, TJPF_RGB,
                    TJFLAG_STOPONWARNING) != 0) {
    if (tjGetErrorCode(handle.get()) == TJERR_WARNING) return stopped();
    throw IoError(std::string("not a decodable image: ") + tjGetErrorStr2(handle.get()));
  }

  if (turned) {
    const Size upright = orientation.value >= 5 ? Size{height, width} : Size{width, height};
    frame = allocate(upright);
    cv::Mat upright_pixels(upright.height, upright.width, CV_8UC3, frame.data);
    turn_upright(stored, upright_pixels, orientation.value);
  }
  return {.decoded = true, .libjpeg_message = {}, .warning = false};
}

std::vector<std::uint8_t> encode_jpeg_on_cpu(ConstFrameView image, int quality) {
  const Handle handle(tjInitCompress());
  if (!handle) throw IoError("TurboJPEG could not make a compressor");
  unsigned char* bytes = nullptr;
  unsigned long size = 0;
  // ACCURATEDCT: TurboJPEG's default below quality 96 is the fast DCT; OpenCV's (libjpeg's) is the accurate one.
  const int result = tjCompress2(handle.get(), image.data, image.size.width, 0, image.size.height, TJPF_RGB, &bytes,
                                 &size, TJSAMP_420, quality, TJFLAG_ACCURATEDCT);
  const std::unique_ptr<unsigned char, JpegBufferDeleter> owned(bytes);
  if (result != 0) throw IoError(std::string("TurboJPEG could not encode it: ") + tjGetErrorStr2(handle.get()));
  return {bytes, bytes + size};
}

std::string cpu_jpeg_library() {
  constexpr int version = LIBJPEG_TURBO_VERSION_NUMBER;
  return "libjpeg-turbo " + std::to_string(version / 1000000) + "." + std::to_string(version / 1000 % 1000) + "." +
         std::to_string(version % 1000);
}

}  // namespace imgpipe::io
