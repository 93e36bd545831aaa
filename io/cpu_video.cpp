// Video files decoded on the CPU through FFmpeg's libraries: libavformat demuxes, libavcodec decodes on all
// cores (its own frame and slice threads), and libswscale converts each frame to RGB straight into the engine's
// buffer, as the ffmpeg command's scale filter does: bicubic flags, the colour matrix and range the stream
// declares (BT.601 where it declares none). A rotation the container declares is applied as the ffmpeg
// command applies it. Frames come out in display order, as FFmpeg's decoders show them: pictures an MP4 edit
// list cuts are decoded and not shown.
#include "cpu_video.hpp"

#include "libav_support.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

namespace imgpipe::io {
namespace {

Size turned(Size size, int quarter_turns) { return quarter_turns % 2 == 1 ? Size{size.height, size.width} : size; }

// `source` (packed RGB) turned clockwise by `quarter_turns` into `target`, whose size is turned(source's).
void turn(ConstFrameView source, int quarter_turns, FrameView target) {
  const int w = source.size.width, h = source.size.height;
  for (int row = 0; row < target.size.height; ++row) {
    for (int col = 0; col < target.size.width; ++col) {
      const int from_col = quarter_turns == 1 ? row : quarter_turns == 2 ? w - 1 - col : w - 1 - row;
      const int from_row = quarter_turns == 1 ? h - 1 - col : quarter_turns == 2 ? h - 1 - row : col;
      std::memcpy(target.data + 3 * (static_cast<std::size_t>(row) * target.size.width + col),
                  source.data + 3 * (static_cast<std::size_t>(from_row) * w + from_col), 3);
    }
  }
}

// A FIFO or a pipe as libavformat's input, read through poll(2) on it and on a cancel descriptor: libavformat's
// own file reads block in read(2), where a stop request cannot reach them while a live feed stalls.
class CancellablePipe {
 public:
  // nullptr where `path` is no FIFO or pipe (a file never stalls) or `cancel_fd` < 0.
  static std::unique_ptr<CancellablePipe> open(const std::filesystem::path& path, int cancel_fd) {
    const std::filesystem::path file = local_file_named(path.string());  // a file: URL's too
    struct stat info {};
    if (cancel_fd < 0 || ::stat(file.c_str(), &info) != 0 || !S_ISFIFO(info.st_mode)) return nullptr;
    // Without O_NONBLOCK, opening a FIFO waits for its writer, and no stop could end that wait.
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw IoError(path, std::string("cannot open: ") + std::strerror(errno));
    return std::unique_ptr<CancellablePipe>(new CancellablePipe(fd, cancel_fd));
  }
  ~CancellablePipe() {
    if (context_ != nullptr) av_freep(&context_->buffer);
    avio_context_free(&context_);
    ::close(fd_);
  }
  CancellablePipe(const CancellablePipe&) = delete;
  CancellablePipe& operator=(const CancellablePipe&) = delete;

  AVIOContext* context() const { return context_; }

 private:
  CancellablePipe(int fd, int cancel_fd) : fd_(fd), cancel_fd_(cancel_fd) {
    constexpr int kBufferBytes = 1 << 16;
    auto* buffer = static_cast<unsigned char*>(av_malloc(kBufferBytes));
    context_ = buffer != nullptr
                   ? avio_alloc_context(buffer, kBufferBytes, 0, this, &CancellablePipe::read, nullptr, nullptr)
                   : nullptr;
    if (context_ == nullptr) {
      av_free(buffer);
      ::close(fd_);
      throw std::bad_alloc();
    }
  }

  // libavformat's read callback: bytes as they come, AVERROR_EOF once the writer is gone, AVERROR_EXIT once the
  // cancel descriptor is readable.
  static int read(void* opaque, std::uint8_t* bytes, int size) {
    const auto& pipe = *static_cast<const CancellablePipe*>(opaque);
    while (true) {
      pollfd wait_for[] = {{pipe.fd_, POLLIN, 0}, {pipe.cancel_fd_, POLLIN, 0}};
      if (::poll(wait_for, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return AVERROR(errno);
      }
      if ((wait_for[1].revents & POLLIN) != 0) return AVERROR_EXIT;
      if (wait_for[0].revents == 0) continue;
      const ssize_t got = ::read(pipe.fd_, bytes, static_cast<std::size_t>(size));
      if (got > 0) return static_cast<int>(got);
      if (got == 0) return AVERROR_EOF;
      if (errno != EINTR && errno != EAGAIN) return AVERROR(errno);
    }
  }

  int fd_;
  int cancel_fd_;
  AVIOContext* context_ = nullptr;
};

class FfmpegVideoReader final : public FrameReader {
 public:
  FfmpegVideoReader(const std::filesystem::path& path, std::uint64_t max_pixels, int cancel_fd)
      : path_(path), pipe_(CancellablePipe::open(path, cancel_fd)) {
    if (const int error = libav::open_input(path, format_, &log_, pipe_ ? pipe_->context() : nullptr, cancel_fd);
        error < 0) {
      if (error == AVERROR_EXIT) throw StreamCancelled(path, "stopped while waiting for the video's start");
      throw IoError(path, "cannot open as a video: " + libav::error_text(error), libav::system_error_of(error));
    }
    const AVCodec* codec = nullptr;
    stream_ = av_find_best_stream(format_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (stream_ == AVERROR_DECODER_NOT_FOUND) {
      const AVCodecID id = format_->streams[av_find_best_stream(format_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0)]
                               ->codecpar->codec_id;
      throw IoError(path, std::string("cannot open as a video: this FFmpeg has no decoder for its ") +
                              avcodec_get_name(id) + " video");
    }
    if (stream_ < 0) throw IoError(path, "cannot open as a video: the file holds no video stream");
    const AVStream& video = *format_->streams[stream_];
    quarter_turns_ = libav::clockwise_quarter_turns(video);
    display_aspect_ = libav::anamorphic_display_aspect(*format_, *format_->streams[stream_]);
    if (display_aspect_ && quarter_turns_ % 2 == 1) std::swap(display_aspect_->width, display_aspect_->height);
    rgb_color_space_ = libav::declared_rgb_color_space(video);
    const Size declared = turned({video.codecpar->width, video.codecpar->height}, quarter_turns_);
    if (declared.width >= 1 && declared.height >= 1 && declared.pixels() > max_pixels) {
      throw PixelLimitError(path, pixel_limit_reason(static_cast<std::uint64_t>(declared.width),
                                                     static_cast<std::uint64_t>(declared.height), max_pixels) +
                                      " (the frame size the video declares; no frame was decoded)");
    }

    decoder_.reset(avcodec_alloc_context3(codec));
    if (!decoder_) throw std::bad_alloc();
    if (const int error = avcodec_parameters_to_context(decoder_.get(), video.codecpar); error < 0) {
      throw IoError(path, "cannot open as a video: its parameters cannot be read: " + libav::error_text(error));
    }
    decoder_->pkt_timebase = video.time_base;
    decoder_->thread_count = 0;  // one per core
    decoder_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    log_.watch(*decoder_);  // copied into the threads' contexts
    if (const int error = avcodec_open2(decoder_.get(), codec, nullptr); error < 0) {
      throw IoError(path, std::string("cannot open as a video: FFmpeg's ") + codec->name +
                              " decoder refused it: " + libav::error_text(error));
    }
    seconds_per_tick_ = av_q2d(video.time_base);
    const double seconds = video.duration != AV_NOPTS_VALUE ? static_cast<double>(video.duration) * seconds_per_tick_
                           : format_->duration > 0          ? static_cast<double>(format_->duration) / AV_TIME_BASE
                                                            : 0.0;
    has_times_ = (format_->iformat->flags & AVFMT_NOTIMESTAMPS) == 0;  // elementary streams' pictures have none
    frame_rate_ = av_q2d(video.avg_frame_rate) > 0 ? av_q2d(video.avg_frame_rate) : av_q2d(video.r_frame_rate);
    if (video.nb_frames > 0) {
      frames_expected_ = static_cast<std::uint64_t>(video.nb_frames);
    } else if (seconds > 0 && frame_rate_ > 0) {
      frames_expected_ = static_cast<std::uint64_t>(std::llround(seconds * frame_rate_));
    }
    description_ = std::string("CPU (FFmpeg's ") + codec->name + " decoder";
    if (format_->iformat->long_name != nullptr) {
      description_ += ", demuxed from " + std::string(format_->iformat->long_name);
    }
    if (quarter_turns_ != 0) description_ += ", turned " + std::to_string(90 * quarter_turns_) + " degrees clockwise";
    description_ += ")";
    frame_.reset(av_frame_alloc());
    if (!frame_) throw std::bad_alloc();
  }
  ~FfmpegVideoReader() override { sws_freeContext(scaler_); }
  FfmpegVideoReader(const FfmpegVideoReader&) = delete;
  FfmpegVideoReader& operator=(const FfmpegVideoReader&) = delete;

  std::optional<Size> next_size() override {
    if (!decode_next()) return std::nullopt;
    shown_time_.reset();
    if (has_times_ && frame_->best_effort_timestamp != AV_NOPTS_VALUE) {
      shown_time_ = static_cast<double>(frame_->best_effort_timestamp) * seconds_per_tick_;
    }
    const bool damage_logged = log_.take_damaged_packet(frame_->reordered_opaque);
    if (frame_->decode_error_flags != 0 || (frame_->flags & AV_FRAME_FLAG_CORRUPT) != 0 || packets_refused_ > 0 ||
        damage_logged) {
      corrupt_.push_back(frames_);  // a refused packet's loss shows in the next frame out
      packets_refused_ = 0;
    }
    return turned({frame_->width, frame_->height}, quarter_turns_);
  }

  void read(FrameView frame) override {
    const Size decoded{frame_->width, frame_->height};
    if (frame.size != turned(decoded, quarter_turns_)) throw std::logic_error("FfmpegVideoReader::read: wrong size");
    if (quarter_turns_ == 0) {
      convert(frame);
    } else {
      upright_scratch_.resize(decoded.rgb_bytes());
      convert({upright_scratch_.data(), decoded});
      turn({upright_scratch_.data(), decoded}, quarter_turns_, frame);
    }
    av_frame_unref(frame_.get());
    ++frames_;
  }

  std::optional<double> frame_rate() const override {
    return frame_rate_ > 0 ? std::optional(frame_rate_) : std::nullopt;
  }
  std::optional<double> frame_time() const override { return shown_time_; }
  std::optional<std::uint64_t> frames_expected() const override { return frames_expected_; }
  std::vector<std::uint64_t> corrupt_frames() const override { return corrupt_; }
  std::string container_damage() const override { return log_.demuxer_error(); }
  std::optional<DisplayAspect> display_aspect() const override { return display_aspect_; }
  std::optional<RgbColorSpace> rgb_color_space() const override { return rgb_color_space_; }
  std::string decoder() const override { return description_; }

 private:
  // Decodes the next frame to show into frame_; false at the end of the stream.
  bool decode_next() {
    libav::ReaderLog::listen();
    av_frame_unref(frame_.get());
    while (true) {
      const int received = avcodec_receive_frame(decoder_.get(), frame_.get());
      if (received == 0) {
        errors_in_a_row_ = 0;
        return true;
      }
      if (received == AVERROR_EOF) return false;
      if (received != AVERROR(EAGAIN)) {
        // A picture the decoder could not decode (reported by a frame thread): it goes on with the next one.
        ++packets_refused_;
        if (++errors_in_a_row_ > kMostErrorsInARow) {
          throw IoError(path_, "the decoder failed " + std::to_string(errors_in_a_row_) +
                                   " times in a row after frame " + std::to_string(frames_) + ": " +
                                   libav::error_text(received));
        }
        continue;
      }
      errors_in_a_row_ = 0;
      if (drained_) return false;
      feed_decoder();
    }
  }

  // Hands the decoder the video stream's next packet, or, at the end of the file, the end of the stream.
  void feed_decoder() {
    while (true) {
      const int read = av_read_frame(format_.get(), packet_.get());
      // A stop while the input stalls ends it there: the pictures already read still come out.
      if (read == AVERROR_EOF || read == AVERROR_EXIT) {
        avcodec_send_packet(decoder_.get(), nullptr);
        drained_ = true;
        return;
      }
      if (read < 0) {
        throw IoError(path_, "reading failed at frame " + std::to_string(frames_) + ": " + libav::error_text(read));
      }
      if (packet_->stream_index != stream_) {
        av_packet_unref(packet_.get());
        continue;
      }
      decoder_->reordered_opaque = packets_sent_++;
      const int sent = avcodec_send_packet(decoder_.get(), packet_.get());
      av_packet_unref(packet_.get());
      if (sent < 0 && sent != AVERROR(EAGAIN)) ++packets_refused_;  // damaged data: FFmpeg drops the packet
      return;
    }
  }

  // frame_ as packed RGB into `target`, of frame_'s size.
  void convert(FrameView target) {
    const auto format = static_cast<AVPixelFormat>(frame_->format);
    const ScalerKey key{format, frame_->width, frame_->height, frame_->colorspace, frame_->color_range};
    // A context per format and colour description: setting the description rebuilds the conversion's tables
    // (and sws_getCachedContext, comparing ranges, would make a new context for every frame once it is set).
    if (scaler_ == nullptr || key != scaler_key_) {
      sws_freeContext(scaler_);
      scaler_ = sws_getContext(frame_->width, frame_->height, format, frame_->width, frame_->height, AV_PIX_FMT_RGB24,
                               SWS_BICUBIC, nullptr, nullptr, nullptr);
      if (scaler_ == nullptr) {
        const char* name = av_get_pix_fmt_name(format);
        throw IoError(path_, "frame " + std::to_string(frames_) + ": no conversion to RGB from " +
                                 (name != nullptr ? name : "its pixel format"));
      }
      scaler_key_ = key;
      // The colour matrix and range as the ffmpeg command's scale filter takes them from the frame.
      int* to_rgb = nullptr;
      int* from_rgb = nullptr;
      int source_full = 0, target_full = 0, brightness = 0, contrast = 0, saturation = 0;
      sws_getColorspaceDetails(scaler_, &to_rgb, &source_full, &from_rgb, &target_full, &brightness, &contrast,
                               &saturation);
      const AVColorSpace matrix = frame_->colorspace;  // unknown, reserved and YCgCo ones as BT.601, as the filter
      const int* coefficients = sws_getCoefficients(
          matrix < 1 || matrix > 10 || matrix == AVCOL_SPC_YCGCO ? static_cast<int>(AVCOL_SPC_BT470BG) : matrix);
      if (frame_->color_range != AVCOL_RANGE_UNSPECIFIED) source_full = frame_->color_range == AVCOL_RANGE_JPEG;
      sws_setColorspaceDetails(scaler_, coefficients, source_full, coefficients, target_full, brightness, contrast,
                               saturation);
    }
    const int width = target.size.width, height = target.size.height;
    const std::size_t stride = libav::padded_rgb_stride(width);
    padded_rows_.resize(stride * static_cast<std::size_t>(height));
    // sws_scale reads four planes' pointers and strides (AV_NUM_DATA_POINTERS of them in newer releases).
    std::uint8_t* const planes[AV_NUM_DATA_POINTERS] = {padded_rows_.data()};
    const int strides[AV_NUM_DATA_POINTERS] = {static_cast<int>(stride)};
    sws_scale(scaler_, frame_->data, frame_->linesize, 0, frame_->height, planes, strides);
    for (int row = 0; row < height; ++row) {
      std::memcpy(target.data + static_cast<std::size_t>(row) * 3 * width, padded_rows_.data() + row * stride,
                  3 * static_cast<std::size_t>(width));
    }
  }

  std::filesystem::path path_;
  libav::ReaderLog log_;  // outlives format_ and decoder_, which log to it
  std::unique_ptr<CancellablePipe> pipe_;  // outlives format_, which reads through it
  libav::Input format_;
  libav::Codec decoder_;
  libav::Frame frame_;
  libav::Packet packet_ = libav::make_packet();
  // The frames' format, size and colour description that scaler_ converts.
  struct ScalerKey {
    AVPixelFormat format;
    int width, height;
    AVColorSpace matrix;
    AVColorRange range;
    bool operator==(const ScalerKey&) const = default;
  };
  SwsContext* scaler_ = nullptr;
  ScalerKey scaler_key_{};
  int stream_ = -1;
  int quarter_turns_ = 0;
  std::optional<DisplayAspect> display_aspect_;
  std::optional<RgbColorSpace> rgb_color_space_;
  double seconds_per_tick_ = 0;
  bool has_times_ = false;
  double frame_rate_ = 0;
  std::optional<std::uint64_t> frames_expected_;
  std::string description_;
  bool drained_ = false;
  int packets_refused_ = 0;
  std::int64_t packets_sent_ = 0;
  static constexpr int kMostErrorsInARow = 1000;
  int errors_in_a_row_ = 0;
  std::optional<double> shown_time_;
  std::vector<std::uint64_t> corrupt_;
  std::uint64_t frames_ = 0;
  std::vector<std::uint8_t> upright_scratch_;
  std::vector<std::uint8_t> padded_rows_;  // libav::padded_rgb_stride apart
};

}  // namespace

std::string ffmpeg_video_decoding_unavailable() { return {}; }

std::string ffmpeg_video_decoder_version() {
  const unsigned version = avcodec_version();
  return "FFmpeg's libavcodec " + std::to_string(AV_VERSION_MAJOR(version)) + "." +
         std::to_string(AV_VERSION_MINOR(version)) + "." + std::to_string(AV_VERSION_MICRO(version));
}

std::unique_ptr<FrameReader> open_ffmpeg_video_reader(const std::filesystem::path& path, std::uint64_t max_pixels,
                                                      int cancel_fd) {
  return std::make_unique<FfmpegVideoReader>(path, max_pixels, cancel_fd);
}

}  // namespace imgpipe::io
