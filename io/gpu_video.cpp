#include "gpu_video.hpp"

#include "device_resources.hpp"
#include "video_surface.hpp"

// nv-codec-headers' loader reports a missing library on stderr by default; imgpipe says it in its own words.
#define FFNV_LOG_FUNC(logctx, msg, ...)
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...)
#include <ffnvcodec/dynlink_loader.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

namespace imgpipe::io {
namespace {

struct Nvcuvid {
  CuvidFunctions* api = nullptr;
  std::string missing;  // why it could not be loaded
};

// Loaded once per process, never unloaded (decoders may live until exit).
const Nvcuvid& nvcuvid() {
  static const Nvcuvid library = [] {
    Nvcuvid loaded;
    if (cuvid_load_functions(&loaded.api, nullptr) != 0) {
      loaded.api = nullptr;
      loaded.missing = "the NVIDIA driver's video decode library (libnvcuvid.so.1) could not be loaded";
    }
    return loaded;
  }();
  return library;
}

void check_cuvid(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) {
    throw std::runtime_error(std::string("NVDEC: ") + call + " failed: " +
                             cudaGetErrorString(static_cast<cudaError_t>(result)) + " (CUDA driver error " +
                             std::to_string(static_cast<int>(result)) + ")");
  }
}

const char* codec_name(cudaVideoCodec codec) {
  switch (codec) {
    case cudaVideoCodec_H264: return "H.264";
    case cudaVideoCodec_HEVC: return "HEVC";
    default: return "this codec";
  }
}

const char* chroma_name(cudaVideoChromaFormat chroma) {
  switch (chroma) {
    case cudaVideoChromaFormat_Monochrome: return "monochrome";
    case cudaVideoChromaFormat_420: return "4:2:0";
    case cudaVideoChromaFormat_422: return "4:2:2";
    case cudaVideoChromaFormat_444: return "4:4:4";
  }
  return "unknown chroma";
}

cudaVideoCodec cuvid_codec(VideoCodec codec) {
  return codec == VideoCodec::hevc ? cudaVideoCodec_HEVC : cudaVideoCodec_H264;
}

// The stream's colour as FFmpeg converts it: BT.709 and BT.2020 where the stream says so, otherwise BT.601
// (libswscale's default, also for an unspecified matrix).
VideoColor color_of(const CUVIDEOFORMAT& format) {
  VideoColor color;
  switch (format.video_signal_description.matrix_coefficients) {
    case 1: color.matrix = VideoMatrix::bt709; break;
    case 9: color.matrix = VideoMatrix::bt2020; break;
    default: color.matrix = VideoMatrix::bt601; break;
  }
  color.full_range = format.video_signal_description.video_full_range_flag != 0;
  return color;
}

const char* matrix_name(VideoMatrix matrix) {
  switch (matrix) {
    case VideoMatrix::bt601: return "BT.601";
    case VideoMatrix::bt709: return "BT.709";
    case VideoMatrix::bt2020: return "BT.2020";
  }
  return "unknown matrix";
}

// What this GPU's NVDEC takes of a codec at a chroma format and bit depth (bIsSupported is 0 where the query
// itself fails).
CUVIDDECODECAPS decoder_caps(cudaVideoCodec codec, cudaVideoChromaFormat chroma, unsigned bit_depth_minus8) {
  CUVIDDECODECAPS caps{};
  caps.eCodecType = codec;
  caps.eChromaFormat = chroma;
  caps.nBitDepthMinus8 = bit_depth_minus8;
  check_device(cudaFree(nullptr), "cudaFree");  // the primary context, current for libnvcuvid
  if (nvcuvid().api->cuvidGetDecoderCaps(&caps) != CUDA_SUCCESS) caps.bIsSupported = 0;
  return caps;
}

// Why NVDEC cannot decode `format`, from the engines' own capabilities; empty when it can.
std::string refusal_of(const CUVIDEOFORMAT& format) {
  const std::string what = std::string(codec_name(format.codec)) + " " +
                           std::to_string(format.bit_depth_luma_minus8 + 8) + "-bit " +
                           chroma_name(format.chroma_format);
  if (format.chroma_format != cudaVideoChromaFormat_420) {
    return what + ": imgpipe's NVDEC path converts 4:2:0 only";
  }
  const CUVIDDECODECAPS caps = decoder_caps(format.codec, format.chroma_format, format.bit_depth_luma_minus8);
  if (!caps.bIsSupported) return what + ": this GPU's NVDEC does not decode it";
  const std::string size = std::to_string(format.coded_width) + "x" + std::to_string(format.coded_height);
  if (format.coded_width > caps.nMaxWidth || format.coded_height > caps.nMaxHeight ||
      (format.coded_width / 16) * (format.coded_height / 16) > caps.nMaxMBCount) {
    return what + " at " + size + ": larger than this GPU's NVDEC takes (" + std::to_string(caps.nMaxWidth) + "x" +
           std::to_string(caps.nMaxHeight) + ")";
  }
  if (format.coded_width < caps.nMinWidth || format.coded_height < caps.nMinHeight) {
    return what + " at " + size + ": smaller than this GPU's NVDEC takes (" + std::to_string(caps.nMinWidth) + "x" +
           std::to_string(caps.nMinHeight) + ")";
  }
  const cudaVideoSurfaceFormat surface =
      format.bit_depth_luma_minus8 > 0 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
  if (!(caps.nOutputFormatMask & (1u << surface))) return what + ": this GPU's NVDEC has no NV12/P016 output for it";
  return {};
}

// Surfaces beyond the parser's minimum, so that the engine decodes ahead while a frame is being converted.
constexpr unsigned kExtraDecodeSurfaces = 4;
// Pictures the parser keeps back before display, so that decoding runs ahead of mapping.
constexpr unsigned kDisplayDelay = 2;
constexpr std::size_t kChunkBytes = 1 << 20;

// One stream on one NVDEC engine. A thread of its own feeds the file to libnvcuvid's parser, whose callbacks
// create the decoder, decode each picture and, in display order, map the decoded surface and hand it to the
// reader: the callback waits until the reader has converted the surface into its frame, then unmaps it. So at
// most one surface is held, the decoder never runs more than its surfaces ahead, and nothing is copied twice.
class NvdecReader final : public FrameReader {
 public:
  NvdecReader(const std::filesystem::path& path, cudaVideoCodec codec) : path_(path), codec_(codec) {
    check_device(cudaGetDevice(&device_), "cudaGetDevice");
    copy_stream_ = DeviceStream::create();  // before the file is opened: nothing to close if it throws
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) throw IoError(path, std::strerror(errno));
    decoder_thread_ = std::thread([this] { decode_all(); });
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return format_.has_value() || ended_; });
    if (format_) return;
    lock.unlock();
    stop();
    if (!refusal_.empty()) throw GpuVideoRefusal(path, refusal_);
    throw IoError(path, failure_.empty() ? std::string("no ") + codec_name(codec) +
                                               " sequence header: not an elementary stream of that codec, or empty"
                                         : failure_);
  }

  ~NvdecReader() override { stop(); }

  std::optional<Size> next_size() override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return (shown_ && !taken_) || ended_; });
    if (shown_ && !taken_) return size_;
    if (!failure_.empty()) {
      throw IoError(path_, failure_ + " (after " + std::to_string(frames_shown_) + " frames)");
    }
    return std::nullopt;
  }

  bool decodes_on_device() const override { return true; }

  void read_to_device(const DeviceFrame& frame) override {
    const HandBack hand_back{*this};
    convert(frame);
    check_device(cudaStreamSynchronize(frame.stream), "cudaStreamSynchronize");  // unmapped once this returns
  }

  void read(FrameView frame) override {
    const HandBack hand_back{*this};
    const std::size_t bytes = 3 * frame.size.pixels();
    scratch_.grow(bytes);
    convert(DeviceFrame{scratch_.data(), frame.size, copy_stream_.get()});
    check_device(cudaMemcpyAsync(frame.data, scratch_.data(), bytes, cudaMemcpyDeviceToHost, copy_stream_.get()),
                 "cudaMemcpyAsync");
    copy_stream_.synchronize();
  }

  std::optional<double> frame_rate() const override { return frame_rate_; }

  std::vector<std::uint64_t> corrupt_frames() const override {
    const std::lock_guard lock(mutex_);
    return corrupt_;
  }

  std::string decoder() const override { return description_; }

 private:
  struct Surface {
    unsigned long long pointer = 0;
    unsigned pitch = 0;
  };

  // Returns the shown surface to the decoder thread, also when the conversion threw.
  struct HandBack {
    NvdecReader& reader;
    ~HandBack() {
      {
        const std::lock_guard lock(reader.mutex_);
        reader.taken_ = true;
      }
      reader.changed_.notify_all();
    }
  };

  void convert(const DeviceFrame& frame) {
    Surface surface;
    {
      const std::lock_guard lock(mutex_);
      if (!shown_ || taken_) throw std::logic_error("NVDEC reader: read() without a frame from next_size()");
      surface = *shown_;
    }
    const auto* luma = reinterpret_cast<const std::uint8_t*>(surface.pointer);
    const VideoSurface nv12{luma, luma + static_cast<std::size_t>(surface.pitch) * surface_height_, surface.pitch,
                            {size_.width, size_.height}, bytes_per_sample_};
    convert_video_surface(nv12, color_, frame);
  }

  void stop() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (decoder_thread_.joinable()) decoder_thread_.join();
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
  }

  bool stopping() {
    const std::lock_guard lock(mutex_);
    return stopping_;
  }

  void fail(const std::string& why) {
    const std::lock_guard lock(mutex_);
    if (failure_.empty()) failure_ = why;
    stopping_ = true;
  }

  // The decoder thread: parses the whole file, then says the stream ended.
  void decode_all() {
    try {
      check_device(cudaSetDevice(device_), "cudaSetDevice");  // the device's primary context, current for libnvcuvid
      check_device(cudaFree(nullptr), "cudaFree");
      map_stream_ = DeviceStream::create();
      const CuvidFunctions& api = *nvcuvid().api;
      CUVIDPARSERPARAMS params{};
      params.CodecType = codec_;
      params.ulMaxNumDecodeSurfaces = 1;  // the sequence callback's return value sets the real count
      params.ulErrorThreshold = 100;       // decode damaged pictures too: NVDEC conceals, the stream goes on
      params.ulMaxDisplayDelay = kDisplayDelay;
      params.pUserData = this;
      params.pfnSequenceCallback = [](void* self, CUVIDEOFORMAT* format) {
        return static_cast<NvdecReader*>(self)->on_sequence(*format);
      };
      params.pfnDecodePicture = [](void* self, CUVIDPICPARAMS* picture) {
        return static_cast<NvdecReader*>(self)->on_decode(picture);
      };
      params.pfnDisplayPicture = [](void* self, CUVIDPARSERDISPINFO* shown) {
        return static_cast<NvdecReader*>(self)->on_display(shown);
      };
      check_cuvid(api.cuvidCreateVideoParser(&parser_, &params), "cuvidCreateVideoParser");
      std::vector<unsigned char> chunk(kChunkBytes);
      while (!stopping()) {
        const std::size_t got = std::fread(chunk.data(), 1, chunk.size(), file_);
        if (got == 0) {
          if (std::ferror(file_)) fail(std::string("reading failed: ") + std::strerror(errno));
          break;
        }
        CUVIDSOURCEDATAPACKET packet{};
        packet.payload = chunk.data();
        packet.payload_size = got;
        check_cuvid(api.cuvidParseVideoData(parser_, &packet), "cuvidParseVideoData");
      }
      if (!stopping()) {
        CUVIDSOURCEDATAPACKET end{};
        end.flags = CUVID_PKT_ENDOFSTREAM;
        check_cuvid(api.cuvidParseVideoData(parser_, &end), "cuvidParseVideoData");
      }
    } catch (const std::exception& e) {
      fail(e.what());
    }
    if (parser_ != nullptr) nvcuvid().api->cuvidDestroyVideoParser(parser_);
    if (decoder_ != nullptr) nvcuvid().api->cuvidDestroyDecoder(decoder_);
    map_stream_ = DeviceStream();
    {
      const std::lock_guard lock(mutex_);
      ended_ = true;
    }
    changed_.notify_all();
  }

  // Returns the decode surfaces to allocate (> 1), or 0 to stop the parser.
  int on_sequence(const CUVIDEOFORMAT& format) {
    try {
      if (decoder_ != nullptr) {
        if (format.coded_width == coded_width_ && format.coded_height == coded_height_ &&
            format.chroma_format == cudaVideoChromaFormat_420 && format.bit_depth_luma_minus8 == bit_depth_minus8_) {
          return static_cast<int>(decode_surfaces_);
        }
        fail("the stream changes its format after frame " + std::to_string(frames_shown_) + " (to " +
             std::to_string(format.coded_width) + "x" + std::to_string(format.coded_height) +
             "); imgpipe decodes one format per stream");
        return 0;
      }
      if (std::string refusal = refusal_of(format); !refusal.empty()) {
        const std::lock_guard lock(mutex_);
        refusal_ = std::move(refusal);
        stopping_ = true;
        return 0;
      }
      create_decoder(format);
      {
        const std::lock_guard lock(mutex_);
        format_ = format;
      }
      changed_.notify_all();
      return static_cast<int>(decode_surfaces_);
    } catch (const std::exception& e) {
      fail(e.what());
      return 0;
    }
  }

  void create_decoder(const CUVIDEOFORMAT& format) {
    const int width = format.display_area.right - format.display_area.left;
    const int height = format.display_area.bottom - format.display_area.top;
    coded_width_ = format.coded_width;
    coded_height_ = format.coded_height;
    bit_depth_minus8_ = format.bit_depth_luma_minus8;
    decode_surfaces_ = format.min_num_decode_surfaces + kExtraDecodeSurfaces;
    CUVIDDECODECREATEINFO info{};
    info.ulWidth = format.coded_width;
    info.ulHeight = format.coded_height;
    info.ulMaxWidth = format.coded_width;
    info.ulMaxHeight = format.coded_height;
    info.ulNumDecodeSurfaces = decode_surfaces_;
    info.CodecType = format.codec;
    info.ChromaFormat = format.chroma_format;
    info.bitDepthMinus8 = format.bit_depth_luma_minus8;
    info.OutputFormat = bit_depth_minus8_ > 0 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
    info.DeinterlaceMode =
        format.progressive_sequence ? cudaVideoDeinterlaceMode_Weave : cudaVideoDeinterlaceMode_Adaptive;
    info.ulCreationFlags = cudaVideoCreate_PreferCUVID;
    info.ulNumOutputSurfaces = 1;
    info.display_area.left = static_cast<short>(format.display_area.left);
    info.display_area.top = static_cast<short>(format.display_area.top);
    info.display_area.right = static_cast<short>(format.display_area.right);
    info.display_area.bottom = static_cast<short>(format.display_area.bottom);
    // The output surface is the display area, cropped by the engine; 4:2:0 wants even sizes.
    info.ulTargetWidth = (width + 1) & ~1;
    info.ulTargetHeight = (height + 1) & ~1;
    check_cuvid(nvcuvid().api->cuvidCreateDecoder(&decoder_, &info), "cuvidCreateDecoder");
    size_ = Size{width, height};
    surface_height_ = static_cast<int>(info.ulTargetHeight);
    bytes_per_sample_ = bit_depth_minus8_ > 0 ? 2 : 1;
    color_ = color_of(format);
    if (format.frame_rate.numerator > 0 && format.frame_rate.denominator > 0) {
      frame_rate_ = static_cast<double>(format.frame_rate.numerator) / format.frame_rate.denominator;
    }
    description_ = std::string("NVDEC (") + codec_name(format.codec) + ", " + std::to_string(bit_depth_minus8_ + 8) +
                   "-bit 4:2:0, " + matrix_name(color_.matrix) + (color_.full_range ? " full" : " limited") +
                   " range)";
  }

  int on_decode(CUVIDPICPARAMS* picture) {
    if (stopping()) return 0;
    try {
      check_cuvid(nvcuvid().api->cuvidDecodePicture(decoder_, picture), "cuvidDecodePicture");
      return 1;
    } catch (const std::exception& e) {
      fail(e.what());
      return 0;
    }
  }

  int on_display(CUVIDPARSERDISPINFO* shown) {
    if (shown == nullptr || stopping()) return 1;
    try {
      const CuvidFunctions& api = *nvcuvid().api;
      CUVIDGETDECODESTATUS status{};
      const bool damaged = api.cuvidGetDecodeStatus(decoder_, shown->picture_index, &status) == CUDA_SUCCESS &&
                           (status.decodeStatus == cuvidDecodeStatus_Error ||
                            status.decodeStatus == cuvidDecodeStatus_Error_Concealed);
      CUVIDPROCPARAMS processing{};
      processing.progressive_frame = shown->progressive_frame;
      processing.second_field = shown->repeat_first_field + 1;
      processing.top_field_first = shown->top_field_first;
      processing.unpaired_field = shown->repeat_first_field < 0;
      processing.output_stream = map_stream_.get();
      Surface surface;
      check_cuvid(api.cuvidMapVideoFrame(decoder_, shown->picture_index, &surface.pointer, &surface.pitch,
                                         &processing),
                  "cuvidMapVideoFrame");
      map_stream_.synchronize();  // the surface is complete before another stream reads it
      {
        std::unique_lock lock(mutex_);
        if (damaged) corrupt_.push_back(frames_shown_);
        shown_ = surface;
        taken_ = false;
        changed_.notify_all();
        changed_.wait(lock, [&] { return taken_ || stopping_; });
        shown_.reset();
        ++frames_shown_;
      }
      check_cuvid(api.cuvidUnmapVideoFrame(decoder_, surface.pointer), "cuvidUnmapVideoFrame");
      return 1;
    } catch (const std::exception& e) {
      fail(e.what());
      return 0;
    }
  }

  const std::filesystem::path path_;
  const cudaVideoCodec codec_;
  int device_ = 0;
  std::FILE* file_ = nullptr;
  DeviceStream copy_stream_;    // read(): the frame to the host
  DeviceBuffer scratch_;  // read(): the converted frame before it goes to the host
  std::thread decoder_thread_;

  // Owned by the decoder thread; the reader reads the format fields only after format_ is set.
  CUvideoparser parser_ = nullptr;
  CUvideodecoder decoder_ = nullptr;
  DeviceStream map_stream_;
  unsigned coded_width_ = 0, coded_height_ = 0, bit_depth_minus8_ = 0, decode_surfaces_ = 0;
  Size size_;
  int surface_height_ = 0;
  int bytes_per_sample_ = 1;
  VideoColor color_;
  std::optional<double> frame_rate_;
  std::string description_;

  // Shared, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<CUVIDEOFORMAT> format_;  // set once the decoder exists
  std::optional<Surface> shown_;         // mapped, waiting for the reader
  bool taken_ = false;                   // the reader is done with shown_
  bool stopping_ = false;
  bool ended_ = false;
  std::string refusal_, failure_;
  std::uint64_t frames_shown_ = 0;
  std::vector<std::uint64_t> corrupt_;
};

}  // namespace

std::string gpu_video_unavailable() {
  if (!nvcuvid().missing.empty()) return nvcuvid().missing;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return "no CUDA device";
  }
  return {};
}

int gpu_video_engines() {
  if (!gpu_video_unavailable().empty()) return 0;
  const CUVIDDECODECAPS caps = decoder_caps(cudaVideoCodec_H264, cudaVideoChromaFormat_420, 0);
  return caps.bIsSupported ? static_cast<int>(caps.nNumNVDECs) : 0;
}

std::vector<std::string> describe_gpu_video() {
  if (const std::string why = gpu_video_unavailable(); !why.empty()) return {"NVDEC: unavailable (" + why + ")"};
  std::vector<std::string> lines;
  for (const cudaVideoCodec codec : {cudaVideoCodec_H264, cudaVideoCodec_HEVC}) {
    for (const unsigned bits_minus8 : {0u, 2u}) {
      const CUVIDDECODECAPS caps = decoder_caps(codec, cudaVideoChromaFormat_420, bits_minus8);
      const std::string what = std::string("NVDEC ") + codec_name(codec) + " " + std::to_string(bits_minus8 + 8) +
                               "-bit 4:2:0: ";
      if (!caps.bIsSupported) {
        lines.push_back(what + "not supported by this GPU");
        continue;
      }
      lines.push_back(what + "up to " + std::to_string(caps.nMaxWidth) + "x" + std::to_string(caps.nMaxHeight) + ", " +
                      std::to_string(caps.nNumNVDECs) + " engines (elementary streams: .h264/.264/.avc, "
                      ".hevc/.h265/.265)");
    }
  }
  return lines;
}

std::unique_ptr<FrameReader> open_gpu_video_reader(const std::filesystem::path& path) {
  const std::optional<VideoCodec> codec = elementary_stream_codec(path);
  if (!codec) {
    throw GpuVideoRefusal(path, "NVDEC reads H.264 and HEVC elementary streams (.h264, .264, .avc, .hevc, .h265, "
                                ".265); other files are decoded on the CPU");
  }
  if (const std::string why = gpu_video_unavailable(); !why.empty()) throw GpuVideoRefusal(path, why);
  return std::make_unique<NvdecReader>(path, cuvid_codec(*codec));
}

}  // namespace imgpipe::io
