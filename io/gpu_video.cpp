#include "gpu_video.hpp"

#include "device_resources.hpp"
#include "video_demux.hpp"
#include "video_surface.hpp"

// nv-codec-headers' loader reports a missing library on stderr by default; imgpipe says it in its own words.
#define FFNV_LOG_FUNC(logctx, msg, ...)
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...)
#include <ffnvcodec/dynlink_loader.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

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

struct Surface {
  unsigned long long pointer = 0;
  unsigned pitch = 0;
};

// The decoded stream as the reader hands it out, from its sequence header.
struct StreamFormat {
  Size size;               // the display area
  int surface_height = 0;  // rows of the mapped luma plane; the chroma plane follows them
  int surface_width = 0;   // samples per row of either plane that hold the picture (even)
  int bytes_per_sample = 1;
  VideoColor color;
  std::optional<double> frame_rate;
  std::string description;

  std::size_t nv12_bytes() const {
    return static_cast<std::size_t>(surface_width) * bytes_per_sample * (surface_height + surface_height / 2);
  }
};

// One NVDEC decoder on the thread that drives a parser: made at the stream's first sequence header and kept
// while the format stays (also across parsers, for a stream decoded in chunks).
class NvdecDecoder {
 public:
  NvdecDecoder() = default;
  NvdecDecoder(const NvdecDecoder&) = delete;
  NvdecDecoder& operator=(const NvdecDecoder&) = delete;
  ~NvdecDecoder() { destroy(); }

  // On the thread that made it, where the context is current.
  void destroy() {
    if (decoder_ != nullptr) nvcuvid().api->cuvidDestroyDecoder(decoder_);
    decoder_ = nullptr;
  }

  bool created() const { return decoder_ != nullptr; }
  const StreamFormat& format() const { return format_; }

  // The parser's sequence callback: the decode surfaces to allocate. Returns nullopt with `refusal` set where
  // NVDEC cannot take the stream; throws when decoder creation fails or the format changes mid-stream.
  std::optional<unsigned> on_sequence(const CUVIDEOFORMAT& format, std::string& refusal) {
    if (decoder_ != nullptr) {
      if (format.coded_width == coded_width_ && format.coded_height == coded_height_ &&
          format.chroma_format == cudaVideoChromaFormat_420 && format.bit_depth_luma_minus8 == bit_depth_minus8_) {
        return decode_surfaces_;
      }
      throw std::runtime_error("the stream changes its format (to " + std::to_string(format.coded_width) + "x" +
                               std::to_string(format.coded_height) + "); imgpipe decodes one format per stream");
    }
    refusal = refusal_of(format);
    if (!refusal.empty()) return std::nullopt;
    create(format);
    return decode_surfaces_;
  }

  void decode(CUVIDPICPARAMS* picture) {
    check_cuvid(nvcuvid().api->cuvidDecodePicture(decoder_, picture), "cuvidDecodePicture");
  }

  // Maps a picture in display order; the surface is complete on return. `damaged` says whether NVDEC reported
  // errors in it (it conceals them).
  Surface map(const CUVIDPARSERDISPINFO& shown, const DeviceStream& stream, bool& damaged) {
    const CuvidFunctions& api = *nvcuvid().api;
    CUVIDPROCPARAMS processing{};
    processing.progressive_frame = shown.progressive_frame;
    processing.second_field = shown.repeat_first_field + 1;
    processing.top_field_first = shown.top_field_first;
    processing.unpaired_field = shown.repeat_first_field < 0;
    processing.output_stream = stream.get();
    Surface surface;
    check_cuvid(api.cuvidMapVideoFrame(decoder_, shown.picture_index, &surface.pointer, &surface.pitch, &processing),
                "cuvidMapVideoFrame");
    stream.synchronize();  // the surface is complete before another stream reads it
    // Asked once the picture is decoded: before, the status is only "in progress".
    CUVIDGETDECODESTATUS status{};
    damaged = api.cuvidGetDecodeStatus(decoder_, shown.picture_index, &status) == CUDA_SUCCESS &&
              (status.decodeStatus == cuvidDecodeStatus_Error ||
               status.decodeStatus == cuvidDecodeStatus_Error_Concealed);
    return surface;
  }

  void unmap(const Surface& surface) {
    check_cuvid(nvcuvid().api->cuvidUnmapVideoFrame(decoder_, surface.pointer), "cuvidUnmapVideoFrame");
  }

 private:
  void create(const CUVIDEOFORMAT& format) {
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
    format_.size = Size{width, height};
    format_.surface_width = static_cast<int>(info.ulTargetWidth);
    format_.surface_height = static_cast<int>(info.ulTargetHeight);
    format_.bytes_per_sample = bit_depth_minus8_ > 0 ? 2 : 1;
    format_.color = color_of(format);
    if (format.frame_rate.numerator > 0 && format.frame_rate.denominator > 0) {
      format_.frame_rate = static_cast<double>(format.frame_rate.numerator) / format.frame_rate.denominator;
    }
    format_.description = std::string("NVDEC (") + codec_name(format.codec) + ", " +
                          std::to_string(bit_depth_minus8_ + 8) + "-bit 4:2:0, " + matrix_name(format_.color.matrix) +
                          (format_.color.full_range ? " full" : " limited") + " range)";
  }

  CUvideodecoder decoder_ = nullptr;
  unsigned coded_width_ = 0, coded_height_ = 0, bit_depth_minus8_ = 0, decode_surfaces_ = 0;
  StreamFormat format_;
};

// A libnvcuvid parser whose callbacks go to `owner`'s on_sequence, on_decode and on_display (each returns what
// the parser's callback returns).
template <typename Owner>
class Parser {
 public:
  Parser(cudaVideoCodec codec, Owner& owner) {
    CUVIDPARSERPARAMS params{};
    params.CodecType = codec;
    params.ulMaxNumDecodeSurfaces = 1;  // the sequence callback's return value sets the real count
    params.ulErrorThreshold = 100;       // decode damaged pictures too: NVDEC conceals, the stream goes on
    params.ulMaxDisplayDelay = kDisplayDelay;
    params.pUserData = &owner;
    params.pfnSequenceCallback = [](void* self, CUVIDEOFORMAT* format) {
      return static_cast<Owner*>(self)->on_sequence(*format);
    };
    params.pfnDecodePicture = [](void* self, CUVIDPICPARAMS* picture) {
      return static_cast<Owner*>(self)->on_decode(picture);
    };
    params.pfnDisplayPicture = [](void* self, CUVIDPARSERDISPINFO* shown) {
      return shown == nullptr ? 1 : static_cast<Owner*>(self)->on_display(*shown);
    };
    check_cuvid(nvcuvid().api->cuvidCreateVideoParser(&parser_, &params), "cuvidCreateVideoParser");
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
  ~Parser() { nvcuvid().api->cuvidDestroyVideoParser(parser_); }

  // `whole_picture`: the bytes are exactly one picture (a frame or a field), which the parser then decodes
  // before it returns, or skips.
  void parse(const unsigned char* bytes, std::size_t size, bool whole_picture = false) {
    CUVIDSOURCEDATAPACKET packet{};
    packet.payload = bytes;
    packet.payload_size = size;
    if (whole_picture) packet.flags = CUVID_PKT_ENDOFPICTURE;
    check_cuvid(nvcuvid().api->cuvidParseVideoData(parser_, &packet), "cuvidParseVideoData");
  }

  // Shows the pictures still held back.
  void end_of_stream() {
    CUVIDSOURCEDATAPACKET end{};
    end.flags = CUVID_PKT_ENDOFSTREAM;
    check_cuvid(nvcuvid().api->cuvidParseVideoData(parser_, &end), "cuvidParseVideoData");
  }

 private:
  CUvideoparser parser_ = nullptr;
};

// Makes the device's primary context current on a decoder thread, for libnvcuvid.
void use_device_on_this_thread(int device) {
  check_device(cudaSetDevice(device), "cudaSetDevice");
  check_device(cudaFree(nullptr), "cudaFree");
}

VideoSurface nv12_of(const StreamFormat& format, const Surface& surface) {
  const auto* luma = reinterpret_cast<const std::uint8_t*>(surface.pointer);
  return {luma, luma + static_cast<std::size_t>(surface.pitch) * format.surface_height, surface.pitch,
          {format.size.width, format.size.height}, format.bytes_per_sample};
}

// What both readers share: the frame handed to the host through a device scratch buffer.
void read_through_device(FrameReader& reader, FrameView frame, DeviceBuffer& scratch, const DeviceStream& stream) {
  const std::size_t bytes = 3 * frame.size.pixels();
  scratch.grow(bytes);
  reader.read_to_device(DeviceFrame{scratch.data(), frame.size, stream.get()});
  check_device(cudaMemcpyAsync(frame.data, scratch.data(), bytes, cudaMemcpyDeviceToHost, stream.get()),
               "cudaMemcpyAsync");
  stream.synchronize();
}

// Why a reader's decoder threads ended before the stream's format was known: NVDEC refused the stream, the
// decoding failed, or the file held no sequence header at all.
[[noreturn]] void throw_unopened(const std::filesystem::path& path, cudaVideoCodec codec, const std::string& refusal,
                                 const std::string& failure) {
  if (!refusal.empty()) throw GpuVideoRefusal(path, refusal);
  throw IoError(path, failure.empty() ? std::string("no ") + codec_name(codec) +
                                            " sequence header: not an elementary stream of that codec, or empty"
                                      : failure);
}

// One stream on one NVDEC engine. A thread of its own feeds the bitstream to libnvcuvid's parser, whose
// callbacks create the decoder, decode each picture and, in display order, map the decoded surface and hand it
// to the reader: the callback waits until the reader has converted the surface into its frame, then unmaps
// it. So at most one surface is held, the decoder never runs more than its surfaces ahead, and nothing is
// copied twice. A container's packets are pictures, in decoding order: each decoded picture takes the time and
// the discard flag of its packet, by its decode surface (the timestamps libnvcuvid's parser carries did not
// stay with their pictures: docs/video.md), so a frame keeps its packet's time, and pictures the edit list does
// not show are decoded (later ones may refer to them) but never handed out, as FFmpeg's decoders do. Each
// packet is parsed as one whole picture, which the parser decodes before it returns or not at all: a packet
// left undecoded (the leading pictures of an open GOP the stream starts at, which FFmpeg does not show either)
// gives no picture, and the pictures after it keep their own packets.
class NvdecReader final : public FrameReader {
 public:
  // `why_one_decoder`, when given, ends decoder()'s description: why the stream was not split.
  NvdecReader(const std::filesystem::path& path, std::unique_ptr<Bitstream> bitstream, std::string why_one_decoder)
      : path_(path),
        codec_(cuvid_codec(bitstream->codec())),
        why_one_decoder_(std::move(why_one_decoder)),
        bitstream_(std::move(bitstream)) {
    check_device(cudaGetDevice(&device_), "cudaGetDevice");
    copy_stream_ = DeviceStream::create();
    decoder_thread_ = std::thread([this] { decode_all(); });
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return format_known_ || ended_; });
    if (format_known_) return;
    lock.unlock();
    stop();
    throw_unopened(path, codec_, refusal_, failure_);
  }

  ~NvdecReader() override { stop(); }

  std::optional<Size> next_size() override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return (shown_ && !taken_) || ended_; });
    if (shown_ && !taken_) return format_.size;
    if (!failure_.empty()) {
      throw IoError(path_, failure_ + " (after " + std::to_string(frames_shown_) + " frames)");
    }
    return std::nullopt;
  }

  bool decodes_on_device() const override { return true; }

  void read_to_device(const DeviceFrame& frame) override {
    const HandBack hand_back{*this};
    Surface surface;
    {
      const std::lock_guard lock(mutex_);
      if (!shown_ || taken_) throw std::logic_error("NVDEC reader: read() without a frame from next_size()");
      surface = *shown_;
    }
    convert_video_surface(nv12_of(format_, surface), format_.color, frame);
    check_device(cudaStreamSynchronize(frame.stream), "cudaStreamSynchronize");  // unmapped once this returns
  }

  void read(FrameView frame) override { read_through_device(*this, frame, scratch_, copy_stream_); }

  std::optional<double> frame_rate() const override {
    const std::optional<double> declared = bitstream_->frame_rate();
    return declared ? declared : format_.frame_rate;
  }

  std::optional<double> frame_time() const override {
    const std::lock_guard lock(mutex_);
    return shown_time_;
  }

  std::vector<std::uint64_t> corrupt_frames() const override {
    const std::lock_guard lock(mutex_);
    return corrupt_;
  }

  std::string container_damage() const override { return bitstream_->container_damage(); }
  std::optional<DisplayAspect> display_aspect() const override { return bitstream_->display_aspect(); }
  std::optional<RgbColorSpace> rgb_color_space() const override { return bitstream_->rgb_color_space(); }

  std::string decoder() const override {
    const std::string container = bitstream_->container();
    return format_.description + (container.empty() ? "" : ", demuxed from " + container) + why_one_decoder_;
  }

  // The parser's callbacks, on the decoder thread.
  int on_sequence(const CUVIDEOFORMAT& format) {
    try {
      std::string refusal;
      const std::optional<unsigned> surfaces = decoder_.on_sequence(format, refusal);
      if (!surfaces) {
        const std::lock_guard lock(mutex_);
        refusal_ = std::move(refusal);
        stopping_ = true;
        return 0;
      }
      if (!format_known_) {
        const std::lock_guard lock(mutex_);
        format_ = decoder_.format();
        format_known_ = true;
      }
      changed_.notify_all();
      return static_cast<int>(*surfaces);
    } catch (const std::exception& e) {
      fail(e.what());
      return 0;
    }
  }

  int on_decode(CUVIDPICPARAMS* picture) {
    if (stopping()) return 0;
    try {
      if (!packets_.empty() && !(picture->field_pic_flag && picture->second_field)) {
        pictures_[picture->CurrPicIdx] = packets_.front();
        packets_.pop_front();
      }
      decoder_.decode(picture);
      return 1;
    } catch (const std::exception& e) {
      fail(e.what());
      return 0;
    }
  }

  int on_display(const CUVIDPARSERDISPINFO& shown) {
    if (stopping()) return 1;
    std::optional<PacketTiming> packet;
    if (const auto found = pictures_.find(shown.picture_index); found != pictures_.end()) {
      packet = found->second;
      pictures_.erase(found);
    }
    if (packet && packet->discard) return 1;
    try {
      bool damaged = false;
      const Surface surface = decoder_.map(shown, map_stream_, damaged);
      {
        std::unique_lock lock(mutex_);
        if (damaged) corrupt_.push_back(frames_shown_);
        shown_ = surface;
        shown_time_.reset();
        if (packet && packet->pts) shown_time_ = static_cast<double>(*packet->pts) * seconds_per_tick_;
        taken_ = false;
        changed_.notify_all();
        changed_.wait(lock, [&] { return taken_ || stopping_; });
        shown_.reset();
        ++frames_shown_;
      }
      decoder_.unmap(surface);
      return 1;
    } catch (const std::exception& e) {
      fail(e.what());
      return 0;
    }
  }

 private:
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

  void stop() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (decoder_thread_.joinable()) decoder_thread_.join();
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

  // The decoder thread: parses the whole bitstream, then says the stream ended.
  void decode_all() {
    try {
      use_device_on_this_thread(device_);
      map_stream_ = DeviceStream::create();
      seconds_per_tick_ = bitstream_->seconds_per_tick();
      const bool pieces_are_pictures = bitstream_->pieces_are_pictures();
      Parser parser(codec_, *this);
      while (!stopping()) {
        const std::optional<BitstreamPiece> piece = bitstream_->next();
        if (!piece) break;
        if (pieces_are_pictures) packets_.push_back({piece->pts, piece->discard});
        parser.parse(piece->bytes.data(), piece->bytes.size(), pieces_are_pictures);
        if (pieces_are_pictures) packets_.clear();  // a packet the parser skipped
      }
      if (!stopping()) parser.end_of_stream();
    } catch (const IoError& e) {
      fail(e.reason());  // next_size() names the file
    } catch (const std::exception& e) {
      fail(e.what());
    }
    decoder_.destroy();
    map_stream_ = DeviceStream();
    {
      const std::lock_guard lock(mutex_);
      ended_ = true;
    }
    changed_.notify_all();
  }

  const std::filesystem::path path_;
  const cudaVideoCodec codec_;
  const std::string why_one_decoder_;
  // Read by the decoder thread; its container, codec and frame rate by any.
  const std::unique_ptr<Bitstream> bitstream_;
  int device_ = 0;
  DeviceStream copy_stream_;  // read(): the frame to the host
  DeviceBuffer scratch_;      // read(): the converted frame before it goes to the host
  std::thread decoder_thread_;

  // Owned by the decoder thread.
  NvdecDecoder decoder_;
  DeviceStream map_stream_;
  double seconds_per_tick_ = 0;
  // A container's packets: parsed and their pictures not yet decoded, in decoding order; then by the decode
  // surface of their picture, until it is shown.
  std::deque<PacketTiming> packets_;
  std::unordered_map<int, PacketTiming> pictures_;

  // Shared, under mutex_; format_ is written once, before format_known_ is set, and only read after.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  StreamFormat format_;
  bool format_known_ = false;
  std::optional<Surface> shown_;  // mapped, waiting for the reader
  std::optional<double> shown_time_;
  bool taken_ = false;            // the reader is done with shown_
  bool stopping_ = false;
  bool ended_ = false;
  std::string refusal_, failure_;
  std::uint64_t frames_shown_ = 0;
  std::vector<std::uint64_t> corrupt_;
};

// The start of a stream looked at for a cut before it is split: a stream without one there is decoded on one
// decoder (probe_split). Each chunk is held in host memory while it is decoded, so the splits that go ahead
// hold about a GOP per decoder.
constexpr std::size_t kSplitProbeBytes = std::size_t{32} << 20;
// Device memory all of a split stream's decoders may hold in decoded frames waiting for their turn, unless the
// caller says: a quarter of what is free when the first frame is decoded, at most 8 GiB (2,700 1080p frames).
constexpr std::size_t kMaxSplitBufferBytes = std::size_t{8} << 30;
// Frames each decoder may hold at least, whatever the budget: enough to decode ahead while a frame is read.
constexpr std::size_t kMinSplitBufferFrames = 8;
// Frames a decoder's pool grows by, in one allocation: cudaMalloc rounds each allocation up to 2 MiB, a third
// more than a 1080p NV12 frame alone would take.
constexpr std::size_t kSplitBufferFramesPerAllocation = 16;

// One stream decoded on several NVDEC engines at once. The stream is cut at its IDR pictures (AnnexBSplitter)
// into chunks; each decoder thread takes the next chunk in stream order, decodes it with a parser of its own
// (the decoder itself is kept from chunk to chunk) and copies each picture, in display order, out of its
// surface into a device NV12 buffer of its own pool. The reader hands the frames out chunk after chunk, so the
// order is the stream's. A decoder whose pool is full waits until the reader has taken frames from it; the
// chunk being read is always being decoded or done, so the reader never waits on a decoder that waits on it.
// What it costs: each decoder's pool (up to the budget above), and a frame of chunk k reaches the reader only
// once the frames of the chunks before it have. A container's chunk comes with its pictures' packet timings,
// paired with the decoded pictures as NvdecReader pairs them.
class SplitNvdecReader final : public FrameReader {
 public:
  SplitNvdecReader(const std::filesystem::path& path, std::unique_ptr<Bitstream> bitstream, const GpuVideoSplit& split)
      : path_(path),
        codec_(cuvid_codec(bitstream->codec())),
        buffer_bytes_(split.buffer_bytes),
        bitstream_(std::move(bitstream)),
        bitstream_buffer_(*bitstream_),
        bitstream_bytes_(&bitstream_buffer_) {
    check_device(cudaGetDevice(&device_), "cudaGetDevice");
    copy_stream_ = DeviceStream::create();
    bitstream_bytes_.exceptions(std::ios::badbit);  // the bitstream's own IoError, not a bare bad stream
    seconds_per_tick_ = bitstream_->seconds_per_tick();
    splitter_.emplace(bitstream_bytes_, path, bitstream_->codec(), split.min_chunk_pictures);
    lanes_.reserve(split.decoders);
    for (int d = 0; d < split.decoders; ++d) lanes_.push_back(std::make_unique<Lane>(*this));
    for (const std::unique_ptr<Lane>& lane : lanes_) lane->thread = std::thread([lane = lane.get()] { lane->run(); });
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return format_known_ || lanes_ended_ == lanes_.size(); });
    if (format_known_) return;
    lock.unlock();
    stop();
    throw_unopened(path, codec_, refusal_, failure_);
  }

  ~SplitNvdecReader() override { stop(); }

  std::optional<Size> next_size() override {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return !failure_.empty() || !refusal_.empty() || readable_or_done(); });
      if (!failure_.empty() || !refusal_.empty()) {
        throw IoError(path_, (failure_.empty() ? refusal_ : failure_) + " (after " + std::to_string(frames_read_) +
                                 " frames)");
      }
      const auto chunk = chunks_.find(reading_chunk_);
      if (chunk == chunks_.end()) return std::nullopt;  // every chunk read
      if (!chunk->second.frames.empty()) return format_.size;
      chunks_.erase(chunk);  // done and read: on to the next
      ++reading_chunk_;
    }
  }

  bool decodes_on_device() const override { return true; }

  void read_to_device(const DeviceFrame& frame) override {
    Decoded decoded;
    {
      const std::lock_guard lock(mutex_);
      const auto chunk = chunks_.find(reading_chunk_);
      if (chunk == chunks_.end() || chunk->second.frames.empty()) {
        throw std::logic_error("NVDEC reader: read() without a frame from next_size()");
      }
      decoded = chunk->second.frames.front();
      chunk->second.frames.pop_front();
      if (decoded.damaged) corrupt_.push_back(frames_read_);
      ++frames_read_;
    }
    // Back to its decoder's pool once converted, also when the conversion throws.
    struct GiveBack {
      SplitNvdecReader& reader;
      const Decoded& decoded;
      ~GiveBack() {
        {
          const std::lock_guard lock(reader.mutex_);
          decoded.lane->free.push_back(decoded.buffer);
        }
        reader.changed_.notify_all();
      }
    } give_back{*this, decoded};
    const Surface surface{reinterpret_cast<unsigned long long>(decoded.buffer),
                          static_cast<unsigned>(format_.surface_width * format_.bytes_per_sample)};
    convert_video_surface(nv12_of(format_, surface), format_.color, frame);
    check_device(cudaStreamSynchronize(frame.stream), "cudaStreamSynchronize");
  }

  void read(FrameView frame) override { read_through_device(*this, frame, scratch_, copy_stream_); }

  std::optional<double> frame_rate() const override {
    const std::optional<double> declared = bitstream_->frame_rate();
    return declared ? declared : format_.frame_rate;
  }

  std::optional<double> frame_time() const override {
    const std::lock_guard lock(mutex_);
    const auto chunk = chunks_.find(reading_chunk_);
    if (chunk == chunks_.end() || chunk->second.frames.empty()) return std::nullopt;
    return chunk->second.frames.front().time;
  }

  std::vector<std::uint64_t> corrupt_frames() const override {
    const std::lock_guard lock(mutex_);
    return corrupt_;
  }

  std::string container_damage() const override { return bitstream_->container_damage(); }
  std::optional<DisplayAspect> display_aspect() const override { return bitstream_->display_aspect(); }
  std::optional<RgbColorSpace> rgb_color_space() const override { return bitstream_->rgb_color_space(); }

  std::string decoder() const override {
    const std::lock_guard lock(mutex_);
    const std::string chunks = std::to_string(chunks_handed_out_) + " chunk" + (chunks_handed_out_ == 1 ? "" : "s");
    const std::string container = bitstream_->container();
    return format_.description + (container.empty() ? "" : ", demuxed from " + container) + ", " +
           std::to_string(lanes_.size()) + " decoders on " + chunks + " cut at IDR pictures";
  }

 private:
  struct Lane;
  struct Decoded {
    Lane* lane = nullptr;
    std::uint8_t* buffer = nullptr;  // NV12/P016, rows of format_.surface_width samples
    bool damaged = false;
    std::optional<double> time;  // its packet's, for a container
  };
  struct ChunkFrames {
    std::deque<Decoded> frames;  // decoded, in display order, not yet read
    bool decoded = false;        // every frame of the chunk is in `frames` or was read
  };

  // One decoder and the thread that drives it, chunk after chunk.
  struct Lane {
    explicit Lane(SplitNvdecReader& r) : reader(r) {}
    SplitNvdecReader& reader;
    std::thread thread;
    NvdecDecoder decoder;
    DeviceStream stream;  // maps and copies the surfaces
    std::vector<DeviceBuffer> pool;  // allocations of up to kSplitBufferFramesPerAllocation frames
    std::vector<std::uint8_t*> free;  // frames of pool, under the reader's mutex_
    std::size_t pool_frames = 0;
    std::size_t max_pool_frames = 0;
    std::uint64_t chunk = 0;  // being decoded
    std::deque<PacketTiming> packets;  // of the chunk's pictures not yet decoded, in decoding order
    std::unordered_map<int, PacketTiming> pictures;  // by decode surface, until shown

    void run() {
      try {
        use_device_on_this_thread(reader.device_);
        stream = DeviceStream::create();
        while (std::optional<StreamChunk> next = reader.take_chunk(chunk, packets)) {
          pictures.clear();
          Parser parser(reader.codec_, *this);
          parser.parse(next->bytes.data(), next->bytes.size());
          if (reader.stopping()) break;
          parser.end_of_stream();
          reader.chunk_decoded(chunk);
        }
      } catch (const std::exception& e) {
        reader.fail(e.what());
      }
      decoder.destroy();  // the pool stays: frames of it may still be waiting for the reader
      {
        const std::lock_guard lock(reader.mutex_);
        ++reader.lanes_ended_;
      }
      reader.changed_.notify_all();
    }

    int on_sequence(const CUVIDEOFORMAT& format) {
      try {
        std::string refusal;
        const std::optional<unsigned> surfaces = decoder.on_sequence(format, refusal);
        if (!surfaces) {
          reader.refuse(refusal);
          return 0;
        }
        reader.format_is(decoder.format());
        return static_cast<int>(*surfaces);
      } catch (const std::exception& e) {
        reader.fail(e.what());
        return 0;
      }
    }

    int on_decode(CUVIDPICPARAMS* picture) {
      if (reader.stopping()) return 0;
      try {
        if (!packets.empty() && !(picture->field_pic_flag && picture->second_field)) {
          pictures[picture->CurrPicIdx] = packets.front();
          packets.pop_front();
        }
        decoder.decode(picture);
        return 1;
      } catch (const std::exception& e) {
        reader.fail(e.what());
        return 0;
      }
    }

    int on_display(const CUVIDPARSERDISPINFO& shown) {
      if (reader.stopping()) return 1;
      std::optional<PacketTiming> packet;
      if (const auto found = pictures.find(shown.picture_index); found != pictures.end()) {
        packet = found->second;
        pictures.erase(found);
      }
      if (packet && packet->discard) return 1;
      try {
        const StreamFormat& format = decoder.format();
        std::uint8_t* buffer = take_buffer(format);
        if (buffer == nullptr) return 1;  // stopping
        bool damaged = false;
        const Surface surface = decoder.map(shown, stream, damaged);
        const std::size_t row_bytes = static_cast<std::size_t>(format.surface_width) * format.bytes_per_sample;
        const cudaError_t copied =
            cudaMemcpy2DAsync(buffer, row_bytes, reinterpret_cast<const void*>(surface.pointer), surface.pitch,
                              row_bytes, format.surface_height + format.surface_height / 2, cudaMemcpyDeviceToDevice,
                              stream.get());
        if (copied == cudaSuccess) stream.synchronize();
        decoder.unmap(surface);
        check_device(copied, "cudaMemcpy2DAsync");
        std::optional<double> time;
        if (packet && packet->pts) time = static_cast<double>(*packet->pts) * reader.seconds_per_tick_;
        reader.frame_decoded(chunk, Decoded{this, buffer, damaged, time});
        return 1;
      } catch (const std::exception& e) {
        reader.fail(e.what());
        return 0;
      }
    }

    // A free frame buffer of the pool, which grows while below its size; nullptr once the reader stops.
    std::uint8_t* take_buffer(const StreamFormat& format) {
      std::unique_lock lock(reader.mutex_);
      if (max_pool_frames == 0) {
        std::size_t free_bytes = 0, total_bytes = 0;
        check_device(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
        const std::size_t total =
            reader.buffer_bytes_ > 0 ? reader.buffer_bytes_ : std::min(free_bytes / 4, kMaxSplitBufferBytes);
        const std::size_t budget = total / reader.lanes_.size();
        max_pool_frames = std::max(kMinSplitBufferFrames, budget / format.nv12_bytes());
      }
      reader.changed_.wait(lock,
                           [&] { return reader.stopping_ || !free.empty() || pool_frames < max_pool_frames; });
      if (reader.stopping_) return nullptr;
      if (free.empty()) {
        const std::size_t frames = std::min(kSplitBufferFramesPerAllocation, max_pool_frames - pool_frames);
        pool.emplace_back();
        pool.back().grow(frames * format.nv12_bytes());
        auto* first = static_cast<std::uint8_t*>(pool.back().data());
        for (std::size_t f = 0; f < frames; ++f) free.push_back(first + f * format.nv12_bytes());
        pool_frames += frames;
      }
      std::uint8_t* buffer = free.back();
      free.pop_back();
      return buffer;
    }
  };

  bool readable_or_done() const {
    const auto chunk = chunks_.find(reading_chunk_);
    if (chunk == chunks_.end()) return splitter_done_ && reading_chunk_ == chunks_handed_out_;
    return !chunk->second.frames.empty() || chunk->second.decoded;
  }

  // The next chunk in stream order for a lane, with its number and, for a container, its pictures' timings;
  // nullopt at the stream's end or once stopping.
  std::optional<StreamChunk> take_chunk(std::uint64_t& number, std::deque<PacketTiming>& timings) {
    const std::lock_guard reading(splitter_mutex_);
    if (stopping()) return std::nullopt;
    std::optional<StreamChunk> chunk;
    try {
      chunk = splitter_->next();
      if (chunk) {
        const std::vector<PacketTiming> taken = bitstream_buffer_.take_timings(chunk->pictures);
        timings.assign(taken.begin(), taken.end());
      }
    } catch (const IoError& e) {
      fail(e.reason());  // next_size() names the file
      return std::nullopt;
    } catch (const std::exception& e) {
      fail(e.what());
      return std::nullopt;
    }
    const std::lock_guard lock(mutex_);
    if (!chunk) {
      splitter_done_ = true;
      changed_.notify_all();
      return std::nullopt;
    }
    number = chunks_handed_out_++;
    chunks_[number];
    return chunk;
  }

  void frame_decoded(std::uint64_t chunk, const Decoded& decoded) {
    {
      const std::lock_guard lock(mutex_);
      chunks_[chunk].frames.push_back(decoded);
    }
    changed_.notify_all();
  }

  void chunk_decoded(std::uint64_t chunk) {
    {
      const std::lock_guard lock(mutex_);
      chunks_[chunk].decoded = true;
    }
    changed_.notify_all();
  }

  void format_is(const StreamFormat& format) {
    {
      const std::lock_guard lock(mutex_);
      if (format_known_) return;  // every lane's decoder has the same format, or fails on its own
      format_ = format;
      format_known_ = true;
    }
    changed_.notify_all();
  }

  void refuse(const std::string& why) {
    {
      const std::lock_guard lock(mutex_);
      if (refusal_.empty()) refusal_ = why;
      stopping_ = true;
    }
    changed_.notify_all();
  }

  void fail(const std::string& why) {
    {
      const std::lock_guard lock(mutex_);
      if (failure_.empty()) failure_ = why;
      stopping_ = true;
    }
    changed_.notify_all();
  }

  bool stopping() const {
    const std::lock_guard lock(mutex_);
    return stopping_;
  }

  void stop() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    for (const std::unique_ptr<Lane>& lane : lanes_) {
      if (lane->thread.joinable()) lane->thread.join();
    }
  }

  const std::filesystem::path path_;
  const cudaVideoCodec codec_;
  const std::size_t buffer_bytes_;  // 0: the default budget
  int device_ = 0;
  DeviceStream copy_stream_;  // read(): the frame to the host
  DeviceBuffer scratch_;      // read(): the converted frame before it goes to the host

  // The bitstream and the splitter, read by one lane at a time; its container, codec and frame rate by any.
  std::mutex splitter_mutex_;
  const std::unique_ptr<Bitstream> bitstream_;
  BitstreamBuffer bitstream_buffer_;
  std::istream bitstream_bytes_;
  std::optional<AnnexBSplitter> splitter_;
  double seconds_per_tick_ = 0;
  std::vector<std::unique_ptr<Lane>> lanes_;

  // Shared, under mutex_; format_ is written once, before format_known_ is set, and only read after.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  StreamFormat format_;
  bool format_known_ = false;
  std::map<std::uint64_t, ChunkFrames> chunks_;  // handed out and not yet read
  std::uint64_t chunks_handed_out_ = 0;
  bool splitter_done_ = false;
  std::uint64_t reading_chunk_ = 0;
  std::uint64_t frames_read_ = 0;
  std::size_t lanes_ended_ = 0;
  bool stopping_ = false;
  std::string refusal_, failure_;
  std::vector<std::uint64_t> corrupt_;
};

}  // namespace

namespace {

bool has_cuda_device() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) return true;
  cudaGetLastError();
  return false;
}

}  // namespace

std::string gpu_video_unavailable() {
  if (!nvcuvid().missing.empty()) return nvcuvid().missing;
  if (!has_cuda_device()) return "no CUDA device";
  return {};
}

int gpu_video_engines() {
  if (!gpu_video_unavailable().empty()) return 0;
  const CUVIDDECODECAPS caps = decoder_caps(cudaVideoCodec_H264, cudaVideoChromaFormat_420, 0);
  return caps.bIsSupported ? static_cast<int>(caps.nNumNVDECs) : 0;
}

std::string nvenc_unavailable() {
  // Asked once: opening a session costs tens of milliseconds and the answer does not change.
  static const std::string why = [] () -> std::string {
    NvencFunctions* nvenc = nullptr;
    if (nvenc_load_functions(&nvenc, nullptr) != 0) {
      return "the NVIDIA driver's video encode library (libnvidia-encode.so.1) could not be loaded";
    }
    if (!has_cuda_device()) {
      nvenc_free_functions(&nvenc);
      return "no CUDA device";
    }
    CudaFunctions* driver = nullptr;
    if (cuda_load_functions(&driver, nullptr) != 0) {
      nvenc_free_functions(&nvenc);
      return "the CUDA driver library (libcuda.so.1) could not be loaded";
    }
    std::string answer;
    int device = 0;
    CUcontext context = nullptr;
    check_device(cudaGetDevice(&device), "cudaGetDevice");
    check_device(cudaFree(nullptr), "cudaFree");
    if (driver->cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS) {
      answer = "the device's CUDA context could not be retained for NVENC";
    } else {
      NV_ENCODE_API_FUNCTION_LIST api{};
      api.version = NV_ENCODE_API_FUNCTION_LIST_VER;
      NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS session{};
      session.version = NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS_VER;
      session.deviceType = NV_ENC_DEVICE_TYPE_CUDA;
      session.device = context;
      session.apiVersion = NVENCAPI_VERSION;
      void* encoder = nullptr;
      NVENCSTATUS status = nvenc->NvEncodeAPICreateInstance(&api);
      if (status == NV_ENC_SUCCESS) status = api.nvEncOpenEncodeSessionEx(&session, &encoder);
      if (status == NV_ENC_SUCCESS) {
        api.nvEncDestroyEncoder(encoder);
      } else if (status == NV_ENC_ERR_NO_ENCODE_DEVICE || status == NV_ENC_ERR_UNSUPPORTED_DEVICE) {
        answer = "this GPU has no NVENC engine";
      } else if (status == NV_ENC_ERR_INVALID_VERSION) {
        answer = "the driver's NVENC does not take imgpipe's encode API version " +
                 std::to_string(NVENCAPI_MAJOR_VERSION) + "." + std::to_string(NVENCAPI_MINOR_VERSION);
      } else {
        answer = "opening an NVENC session failed (NVENCSTATUS " + std::to_string(static_cast<int>(status)) + ")";
      }
      driver->cuDevicePrimaryCtxRelease(device);
    }
    cuda_free_functions(&driver);
    nvenc_free_functions(&nvenc);
    return answer;
  }();
  return why;
}

namespace {

std::string describe_nvenc() {
  const std::string why = nvenc_unavailable();
  if (why.empty()) {
    return "NVENC: present, but imgpipe has no NVENC writer yet; video files are written on the CPU (" +
           video_writers_description() + ")";
  }
  return "NVENC: unavailable (" + why + "); video files are written on the CPU (" + video_writers_description() + ")";
}

// Why NVDEC's path does not read `path`, or "" for a file it reads (one missing is left to the file's own
// error). Its reads block where a stop cannot reach them, so a live feed that stalls (a FIFO, a pipe, a URL)
// could not be stopped there, and it opens its input a second time to look for where to split the stream over the
// engines. The CPU decoder reads those, and stops when asked.
std::string not_a_file_to_split(const std::filesystem::path& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (std::filesystem::exists(status)) {
    return std::filesystem::is_regular_file(status) ? ""
                                                    : "not a regular file (a FIFO, a pipe or a device): NVDEC's path "
                                                      "reads files";
  }
  return names_a_url(path.string()) ? "a URL: NVDEC's path reads files by their paths" : "";
}

}  // namespace

std::vector<std::string> describe_gpu_video() {
  if (const std::string why = gpu_video_unavailable(); !why.empty()) {
    return {"NVDEC: unavailable (" + why + ")", describe_nvenc()};
  }
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
      const std::string containers =
          container_demuxing_unavailable().empty() ? "; containers through libavformat" : "";
      lines.push_back(what + "up to " + std::to_string(caps.nMaxWidth) + "x" + std::to_string(caps.nMaxHeight) + ", " +
                      std::to_string(caps.nNumNVDECs) + " engines (elementary streams: .h264/.264/.avc, " +
                      ".hevc/.h265/.265" + containers + ")");
    }
  }
  lines.push_back(describe_nvenc());
  return lines;
}

std::unique_ptr<FrameReader> open_gpu_video_reader(const std::filesystem::path& path, const GpuVideoSplit& split) {
  if (const std::string why = not_a_file_to_split(path); !why.empty()) throw GpuVideoRefusal(path, why);
  const std::optional<VideoCodec> codec = elementary_stream_codec(path);
  if (const std::string why = container_demuxing_unavailable(); !codec && !why.empty()) {
    throw GpuVideoRefusal(path, "NVDEC reads H.264 and HEVC elementary streams (.h264, .264, .avc, .hevc, .h265, "
                                ".265) here: " + why);
  }
  if (const std::string why = gpu_video_unavailable(); !why.empty()) throw GpuVideoRefusal(path, why);
  auto open_bitstream = [&]() -> std::unique_ptr<Bitstream> {
    if (codec) return open_elementary_stream(path, *codec);
    try {
      return open_container(path);
    } catch (const UnsupportedVideoStream& e) {
      throw GpuVideoRefusal(path, e.reason());
    }
  };
  std::unique_ptr<Bitstream> bitstream = open_bitstream();
  std::string one_decoder_because;
  if (split.decoders > 1) {
    const std::unique_ptr<Bitstream> start = open_bitstream();
    BitstreamBuffer start_buffer(*start);
    std::istream start_bytes(&start_buffer);
    start_bytes.exceptions(std::ios::badbit);
    const SplitProbe probe = probe_split(start_bytes, bitstream->codec(), split.min_chunk_pictures, kSplitProbeBytes);
    // A chunk is parsed whole, so its pictures are paired with their packets by count: a container stream that
    // does not start at an IDR picture, whose leading pictures the parser may skip, is decoded on one decoder,
    // which parses packet by packet.
    if (probe.early_cut && (probe.starts_at_idr || !bitstream->pieces_are_pictures())) {
      return std::make_unique<SplitNvdecReader>(path, std::move(bitstream), split);
    }
    one_decoder_because = probe.early_cut
                              ? std::string(", one decoder: the stream does not start at an IDR picture")
                              : ", one decoder: no IDR picture to cut the stream at after its first " +
                                    std::to_string(split.min_chunk_pictures) + " pictures (open GOPs, or a short stream)";
  }
  return std::make_unique<NvdecReader>(path, std::move(bitstream), one_decoder_because);
}

}  // namespace imgpipe::io
