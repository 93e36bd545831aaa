// JPEG on the CPU through libjpeg-turbo's TurboJPEG API, straight to and from 8-bit RGB. OpenCV's imread and
// imwrite run the same library with the same settings (accurate integer DCT, fancy upsampling, 4:2:0 at the
// given quality), so the pixels and the files are theirs byte for byte, but OpenCV hands libjpeg BGR and swaps
// every pixel's bytes one at a time on the way in and out; that swap was about 40% of a CPU folder job's time.
// Built when OpenCV is, since the files TurboJPEG leaves (CMYK, ambiguous EXIF, headers TurboJPEG refuses, data
// libjpeg warns about) go to OpenCV's decoder.
#pragma once

#include "image.hpp"
#include "image_header.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace imgpipe::io {

// What decode_jpeg_on_cpu made of a file.
struct CpuJpegDecode {
  // false: the file is imread's to decode: CMYK or YCCK, an EXIF orientation only OpenCV's reader can resolve,
  // a header TurboJPEG refuses, or data libjpeg warns about. allocate may have been called already, and
  // imread's frame is then to go into the same buffer.
  bool decoded = false;
  std::string libjpeg_message;  // where TurboJPEG stopped, if it did: libjpeg's warning or error
  bool warning = false;         // that message is a warning, which imread decodes the file despite
};

// Decodes a JPEG into allocate(upright size) as imread(IMREAD_COLOR) does, the file's EXIF orientation
// (read_image_header) applied and grayscale copied into three channels, calling allocate at most once.
// IoError ("not a decodable image: " and libjpeg's reason) for data libjpeg cannot decode.
CpuJpegDecode decode_jpeg_on_cpu(std::span<const std::uint8_t> jpeg, ExifOrientation orientation,
                                 const FrameAllocator& allocate);

// The file imencode(".jpg", {IMWRITE_JPEG_QUALITY, quality}) writes for the same image (baseline, 4:2:0).
std::vector<std::uint8_t> encode_jpeg_on_cpu(ConstFrameView image, int quality);

// "libjpeg-turbo x.y.z", the version built against, for `imgpipe backends`.
std::string cpu_jpeg_library();

}  // namespace imgpipe::io
