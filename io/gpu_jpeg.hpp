// JPEG on the GPU with nvJPEG. Decoding: the files waiting at the same moment go to the hardware JPEG engines
// as one batch (nvJPEG's hardware backend); a file the hardware backend refuses (progressive, unusual
// subsampling...) goes to nvJPEG's GPU-hybrid backend; what neither takes is refused, and the caller decodes it
// on the CPU. Encoding: device frames to JPEG bytes on the SMs, several encoder states at once. Built with
// nvJPEG only (IMGPIPE_HAVE_NVJPEG); elsewhere the constructors throw and gpu_jpeg_unavailable() says why.
//
// Frames are packed interleaved RGB8, as the engine's device buffers hold them: the chain's first kernel reads
// that layout (the optimized path's fused resize + filter head loads it directly). For 4:2:0, 4:4:4 and
// grayscale files the hardware hands over its YCbCr planes, and a kernel upsamples and converts them by
// libjpeg's integer rules into the frame: the engines' planes are libjpeg's own, so the frame is OpenCV's imread
// byte for byte, where the engines' own RGB differs by up to tens of levels at chroma edges. Other layouts, and
// the hybrid backend, give nvJPEG's RGB (docs/gpu-jpeg.md has the measured differences).
#pragma once

#include "device_resources.hpp"
#include "engine.hpp"
#include "image_header.hpp"
#include "job.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace imgpipe::io {

// Which decoder made a frame (counted per run, and shown in the summary).
enum class JpegDecoder { hardware, gpu_hybrid, cpu };
inline std::string_view to_string(JpegDecoder decoder) {
  switch (decoder) {
    case JpegDecoder::hardware: return "GPU hardware";
    case JpegDecoder::gpu_hybrid: return "GPU hybrid";
    case JpegDecoder::cpu: return "CPU";
  }
  return "unknown";
}

// Why GPU JPEG cannot run here (a build without nvJPEG, no CUDA device); empty when it can.
std::string gpu_jpeg_unavailable();

// Why GPU JPEG cannot run with `engine`: it keeps no frames on the device (only the optimized GPU ring does,
// with pageable or pinned host memory), or gpu_jpeg_unavailable(); empty when it can.
inline std::string gpu_jpeg_unavailable(const Engine& engine) {
  if (!engine.device_frames()) {
    return "the engine (" + engine.describe() + ") keeps no frames on the device; GPU JPEG needs the optimized "
           "backend with pageable or pinned host memory";
  }
  return gpu_jpeg_unavailable();
}

// Whether a codec choice ("auto", "gpu" or "cpu", as --decoder and --encoder take them) runs on the GPU with
// `engine`: "auto" wherever GPU JPEG can run, "cpu" never. "gpu" where it cannot throws std::invalid_argument
// saying why.
inline bool gpu_jpeg_chosen(std::string_view choice, const Engine& engine) {
  if (choice == "cpu") return false;
  const std::string why_not = gpu_jpeg_unavailable(engine);
  if (choice == "gpu" && !why_not.empty()) throw std::invalid_argument(why_not);
  return why_not.empty();
}

// Frames in flight by default when JPEG is decoded on the GPU: enough that files always wait for the hardware
// decoder (in the H200's folder job 128 measured no faster than 64).
constexpr int kGpuJpegSlots = 64;

// What nvJPEG offers on this machine, one line per codec, for `imgpipe backends`.
std::vector<std::string> describe_gpu_jpeg();

// Every GPU decoder refused the file or failed on it: decode it on the CPU. `allocated` says whether the
// decoder had already taken its frame from the allocator (the CPU decode must then fill that frame).
class GpuJpegRefusal : public std::runtime_error {
 public:
  GpuJpegRefusal(const std::string& why, bool allocated) : std::runtime_error(why), allocated_(allocated) {}
  bool allocated() const { return allocated_; }

 private:
  bool allocated_;
};

class GpuJpegDecoder {
 public:
  // How files reach the hardware JPEG engines. decoupled: nvJPEG's decoupled decoder (nvjpegDecoderCreate with
  // the hardware backend), one file per call from a few decode threads, each cycling through decoder states of
  // its own, so the engines get the next file while they finish the last. batched: the files waiting together
  // as one nvjpegDecodeBatched call per lane, which returns only once the engines are nearly done, so they idle
  // between batches. Where nvJPEG has no decoupled hardware decoder, batched is used.
  enum class HardwareApi { decoupled, batched };
  struct Options {
    // decoupled: in the H200's folder job 3 threads of 2 states measured fastest, 4 next; 7 (one per JPEG engine)
    // decoded faster alone but slowed the job (docs/gpu-jpeg.md).
    HardwareApi hardware_api = HardwareApi::decoupled;
    int decode_threads = 3;
    int states_per_thread = 2;
    // batched: on the H200 one lane with batches of up to 64 decoded fastest; a second lane sharing the
    // engines, or batches of 128, measured slower (docs/gpu-jpeg.md).
    int lanes = 1;       // threads, each with its own nvJPEG handle and stream
    int max_batch = 64;  // files per batch at most
  };
  // Throws std::runtime_error when nvJPEG or a CUDA device is missing. Without hardware JPEG engines every
  // file goes to the GPU-hybrid backend.
  explicit GpuJpegDecoder(const Options& options);
  ~GpuJpegDecoder();
  GpuJpegDecoder(const GpuJpegDecoder&) = delete;
  GpuJpegDecoder& operator=(const GpuJpegDecoder&) = delete;

  bool has_hardware() const;
  int device() const;  // the CUDA device it was made on (current at construction), which it decodes on

  // What the hardware decoding has done so far: the API it runs through and its threads (decode threads or
  // lanes), the files handed to the engines and, batched, the batches they came in; and the seconds the
  // threads spent in nvJPEG's calls and then waiting for the GPU work those calls queued, summed over threads.
  // Busy seconds over a job's time near the thread count means the hardware decoder bounds the job.
  struct HardwareActivity {
    HardwareApi api = HardwareApi::batched;
    int threads = 0;
    std::uint64_t files = 0;
    std::uint64_t batches = 0;
    double host_seconds = 0;
    double waiting_seconds = 0;
    double busy_seconds() const { return host_seconds + waiting_seconds; }
  };
  HardwareActivity hardware_activity() const;

  // Decodes a whole JPEG file into allocate(size), RGB with EXIF orientation applied and grayscale expanded,
  // as OpenCV's imread does. The frame is complete on return. Called from many threads at once: the hardware
  // decoding takes the files in the order they arrive. Throws PixelLimitError before allocating for an
  // image of more than `max_pixels` pixels, and GpuJpegRefusal when no GPU decoder takes the file.
  // The orientation is read by imread's rules (read_image_header), as the CPU decoder reads it; pass the
  // header's where the caller has read it already. One only OpenCV's reader can resolve is refused before
  // allocating where this build has OpenCV's decoder to fall back on, and taken from nvJPEG's reading otherwise.
  JpegDecoder decode(std::span<const std::uint8_t> jpeg, const DeviceFrameAllocator& allocate,
                     std::uint64_t max_pixels, std::optional<ExifOrientation> orientation = std::nullopt);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// JPEG encoding of device frames on the SMs (nvJPEG's default backend).
class GpuJpegEncoder {
 public:
  struct Options {
    int quality = 95;           // 1..100, as OpenCV's IMWRITE_JPEG_QUALITY
    bool full_chroma = false;   // 4:4:4 instead of 4:2:0 (OpenCV's default)
    int states = 4;             // encodes in flight at once, each with its own encoder state and stream
  };
  explicit GpuJpegEncoder(const Options& options);  // throws std::runtime_error as GpuJpegDecoder does
  ~GpuJpegEncoder();
  GpuJpegEncoder(const GpuJpegEncoder&) = delete;
  GpuJpegEncoder& operator=(const GpuJpegEncoder&) = delete;

  // The JPEG file's bytes for a complete device frame. Thread-safe.
  std::vector<std::uint8_t> encode(const DeviceFrame& frame);

  // Seconds the encoder states have spent encoding so far, summed over states; near states() times a job's
  // time means the encoder bounds the job.
  double busy_seconds() const;
  int states() const;
  int device() const;  // the CUDA device it was made on, whose frames it encodes

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One GPU JPEG codec (GpuJpegDecoder or GpuJpegEncoder) per CUDA device an engine runs on, each made with its
// device current: nvJPEG's handles, states and streams belong to one device, and a frame is decoded or encoded
// by the codec of the device that holds it.
template <class Codec>
class GpuJpegPerDevice {
 public:
  // One per distinct device of `devices`; one on the current device when `devices` is empty.
  GpuJpegPerDevice(const std::vector<int>& devices, const typename Codec::Options& options) {
    if (devices.empty()) codecs_.push_back(std::make_unique<Codec>(options));
    for (const int device : devices) {
      if (std::ranges::any_of(codecs_, [&](const auto& codec) { return codec->device() == device; })) continue;
      const CurrentDevice current(device);
      codecs_.push_back(std::make_unique<Codec>(options));
    }
  }
  // The codec for frames on `device`; throws std::logic_error when none was made there.
  Codec& on(int device) const {
    for (const auto& codec : codecs_) {
      if (codec->device() == device) return *codec;
    }
    throw std::logic_error("GPU JPEG: no codec was made on CUDA device " + std::to_string(device));
  }
  const std::vector<std::unique_ptr<Codec>>& all() const { return codecs_; }

 private:
  std::vector<std::unique_ptr<Codec>> codecs_;
};
using GpuJpegDecoders = GpuJpegPerDevice<GpuJpegDecoder>;
using GpuJpegEncoders = GpuJpegPerDevice<GpuJpegEncoder>;

// True when `bytes` start like a JPEG file (SOI then a marker).
inline bool looks_like_jpeg(std::span<const std::uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

}  // namespace imgpipe::io
