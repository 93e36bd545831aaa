// GPU JPEG in a build without nvJPEG: nothing to construct, and the reason says how to get it.
#include "gpu_jpeg.hpp"

namespace imgpipe::io {

namespace {
constexpr const char* kNoNvjpeg =
    "this build has no nvJPEG (CMake found no nvjpeg.h: install the CUDA toolkit's nvJPEG, or PyPI's "
    "nvidia-nvjpeg and set NVJPEG_ROOT)";
}

std::string gpu_jpeg_unavailable() { return kNoNvjpeg; }

std::vector<std::string> describe_gpu_jpeg() { return {std::string("GPU JPEG: unavailable (") + kNoNvjpeg + ")"}; }

struct GpuJpegDecoder::Impl {};
GpuJpegDecoder::GpuJpegDecoder(const Options&) { throw std::runtime_error(std::string("GPU JPEG: ") + kNoNvjpeg); }
GpuJpegDecoder::~GpuJpegDecoder() = default;
bool GpuJpegDecoder::has_hardware() const { return false; }
GpuJpegDecoder::HardwareActivity GpuJpegDecoder::hardware_activity() const { return {}; }
int GpuJpegDecoder::device() const { return 0; }
JpegDecoder GpuJpegDecoder::decode(std::span<const std::uint8_t>, const DeviceFrameAllocator&, std::uint64_t,
                                   std::optional<ExifOrientation>) {
  throw std::logic_error("GPU JPEG: " + std::string(kNoNvjpeg));
}

struct GpuJpegEncoder::Impl {};
GpuJpegEncoder::GpuJpegEncoder(const Options&) { throw std::runtime_error(std::string("GPU JPEG: ") + kNoNvjpeg); }
GpuJpegEncoder::~GpuJpegEncoder() = default;
std::vector<std::uint8_t> GpuJpegEncoder::encode(const DeviceFrame&) {
  throw std::logic_error("GPU JPEG: " + std::string(kNoNvjpeg));
}
double GpuJpegEncoder::busy_seconds() const { return 0; }
int GpuJpegEncoder::states() const { return 0; }
int GpuJpegEncoder::device() const { return 0; }

}  // namespace imgpipe::io
