// Video files written through FFmpeg's libavformat and libavcodec: H.264 (libx264, else FFmpeg's own MPEG-4
// Part 2 encoder) in MP4, Matroska or QuickTime, each frame at its own presentation time counted from the first
// frame's, so a variable frame rate survives the stream and the file starts at 0; and the input's audio, copied
// packet by packet beside the frames, moved by the same amount.
#include "video_encode.hpp"

#include "file_bytes.hpp"
#include "folder.hpp"
#include "io_error.hpp"
#include "libav_support.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace imgpipe::io {
namespace {

// The MPEG clock: whole ticks for the usual frame rates and for milliseconds.
constexpr AVRational kTimeBase{1, 90000};

const AVCodec* find_encoder() {
  if (const AVCodec* x264 = avcodec_find_encoder_by_name("libx264")) return x264;
  return avcodec_find_encoder(AV_CODEC_ID_MPEG4);
}

bool is_x264(const AVCodec* codec) { return std::string(codec->name) == "libx264"; }

struct OutputDeleter {
  void operator()(AVFormatContext* output) const {
    avio_closep(&output->pb);
    avformat_free_context(output);
  }
};
struct ScalerDeleter {
  void operator()(SwsContext* scaler) const { sws_freeContext(scaler); }
};

// Whether the sound can be read from `source` a second time, beside the video's reader: a pipe or a FIFO would
// hand each of the two readers bytes the other never sees.
bool reopens(const std::filesystem::path& source) {
  std::error_code error;
  return std::filesystem::is_regular_file(source, error);
}

// Whether `format`'s muxer takes a stream of `audio` as it is: some refuse when they start what
// avformat_query_codec accepts (FLAC in MP4, FLAC and Opus in QuickTime), which would fail the whole video. Tried
// on a muxer of its own, writing into memory.
bool muxer_takes(const AVOutputFormat* format, const AVCodecParameters& audio, AVRational time_base) {
  AVFormatContext* trial = nullptr;
  if (avformat_alloc_output_context2(&trial, format, nullptr, nullptr) < 0) return false;
  std::unique_ptr<AVFormatContext, decltype(&avformat_free_context)> owner(trial, &avformat_free_context);
  AVStream* stream = avformat_new_stream(trial, nullptr);
  if (stream == nullptr || avcodec_parameters_copy(stream->codecpar, &audio) < 0) return false;
  stream->codecpar->codec_tag = 0;
  stream->time_base = time_base;
  if (avio_open_dyn_buf(&trial->pb) < 0) return false;
  const int started = avformat_init_output(trial, nullptr);
  std::uint8_t* bytes = nullptr;
  avio_close_dyn_buf(trial->pb, &bytes);
  av_free(bytes);
  trial->pb = nullptr;
  return started >= 0;
}

// The best audio stream of a video file, copied into an output's own stream as it is (no decoding), its packets
// moved by the same origin as the frames, whose times come from the same file: sound and pictures stay together.
class AudioCopy {
 public:
  // Adds the audio stream to `output`, before its header is written, where `source` has one that the output's
  // container takes; note() says what became of it.
  AudioCopy(const std::filesystem::path& source, AVFormatContext& output) : output_(output) {
    if (!reopens(source)) {
      note_ = "audio not carried: the input is a pipe, a FIFO or a URL, whose bytes only the video's decoder reads";
      return;
    }
    if (libav::open_input(source, input_) < 0) return;  // raw frames, or no container
    source_index_ = av_find_best_stream(input_.get(), AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
    if (source_index_ < 0) return;
    const AVCodecParameters& audio = *input_->streams[source_index_]->codecpar;
    const char* codec = avcodec_get_name(audio.codec_id);
    if (avformat_query_codec(output.oformat, audio.codec_id, FF_COMPLIANCE_NORMAL) != 1 ||
        !muxer_takes(output.oformat, audio, input_->streams[source_index_]->time_base)) {
      note_ = std::string("audio not carried: ") + output.oformat->long_name + " takes no " + codec;
      return;
    }
    stream_ = avformat_new_stream(&output, nullptr);
    if (stream_ == nullptr || avcodec_parameters_copy(stream_->codecpar, &audio) < 0) {
      throw IoError(source, "its audio cannot be copied: out of memory");
    }
    stream_->codecpar->codec_tag = 0;  // the output container's own tag for the codec
    stream_->time_base = input_->streams[source_index_]->time_base;
    note_ = std::string("audio copied (") + codec + ")";
  }

  // The source's time (90 kHz ticks) that the output's 0 stands for: the first frame's. Set before copy_until.
  void start_at(std::int64_t origin_ticks) {
    if (stream_ != nullptr) origin_ = av_rescale_q(origin_ticks, kTimeBase, input_->streams[source_index_]->time_base);
  }

  // The source's own start (its container's first time, well above 0 in a transport stream), in 90 kHz ticks.
  std::int64_t source_start() const {
    if (!input_ || input_->start_time == AV_NOPTS_VALUE) return 0;
    return av_rescale_q(input_->start_time, AV_TIME_BASE_Q, kTimeBase);
  }

  // Writes the audio packets that start before `seconds` (a time of the source's frames), each moved back by the
  // origin; those that start before the origin are left out, as their times would be negative and the muxer
  // would then shift every stream, moving the sound against the pictures.
  void copy_until(double seconds) {
    if (stream_ == nullptr) return;
    const AVRational source_base = input_->streams[source_index_]->time_base;
    while (true) {
      if (!pending_) {
        const int read = av_read_frame(input_.get(), packet_.get());
        if (read < 0) {  // the end of the input's audio; a read error ends the audio there, as the end would
          stream_ = nullptr;
          return;
        }
        // Not the audio, or audio the file's edit list cuts (an AAC encoder's priming): the muxer would shift
        // every stream to fit the latter in, moving the sound against the pictures.
        if (packet_->stream_index != source_index_ || (packet_->flags & AV_PKT_FLAG_DISCARD) != 0) {
          av_packet_unref(packet_.get());
          continue;
        }
        pending_ = true;
      }
      const std::int64_t start = packet_->pts != AV_NOPTS_VALUE ? packet_->pts : packet_->dts;
      if (start != AV_NOPTS_VALUE && start < origin_) {
        av_packet_unref(packet_.get());
        pending_ = false;
        continue;
      }
      if (start != AV_NOPTS_VALUE && static_cast<double>(start) * av_q2d(source_base) >= seconds) return;
      if (packet_->pts != AV_NOPTS_VALUE) packet_->pts -= origin_;
      if (packet_->dts != AV_NOPTS_VALUE) packet_->dts -= origin_;
      av_packet_rescale_ts(packet_.get(), source_base, stream_->time_base);
      pending_ = false;
      // Times that go back (a transport stream whose clock restarts, as concatenated recordings do): the muxer
      // refuses them, which would fail the whole video, so those packets are left out and counted.
      if (packet_->dts != AV_NOPTS_VALUE && last_dts_ && packet_->dts <= *last_dts_) {
        av_packet_unref(packet_.get());
        ++packets_out_of_order_;
        continue;
      }
      if (packet_->dts != AV_NOPTS_VALUE) last_dts_ = packet_->dts;
      packet_->stream_index = stream_->index;
      packet_->pos = -1;
      const int written = av_interleaved_write_frame(&output_, packet_.get());  // takes the packet's data
      if (written < 0) throw IoError("writing the audio failed: " + libav::error_text(written));
    }
  }

  std::string note() const {
    if (packets_out_of_order_ == 0) return note_;
    return note_ + "; " + std::to_string(packets_out_of_order_) + " audio packet" +
           (packets_out_of_order_ == 1 ? "" : "s") + " whose times went back (the input's clock restarts) left out";
  }

 private:
  AVFormatContext& output_;
  libav::Input input_;
  int source_index_ = -1;
  AVStream* stream_ = nullptr;  // output_'s; nullptr once the audio is done, or where there is none to copy
  std::int64_t origin_ = 0;     // start_at's, in the source stream's time base
  std::optional<std::int64_t> last_dts_;  // of the last packet written, in stream_'s time base
  std::uint64_t packets_out_of_order_ = 0;
  libav::Packet packet_ = libav::make_packet();
  bool pending_ = false;  // packet_ holds the next audio packet, read and not yet written
  std::string note_;
};

class LibavVideoWriter final : public FrameWriter {
 public:
  LibavVideoWriter(const std::filesystem::path& path, Size size, double fps, Existing existing,
                   const std::filesystem::path& audio_from, const VideoDisplayTags& tags)
      : temporary_(path), size_(size), ticks_per_frame_(std::llround(kTimeBase.den / fps)), existing_(existing) {
    const AVCodec* codec = find_encoder();
    if (codec == nullptr) fail("this FFmpeg has neither libx264 nor its MPEG-4 encoder");
    // 4:2:0 halves the chroma in both directions, so an odd width or height keeps full chroma (libx264's High
    // 4:4:4; the MPEG-4 encoder has 4:2:0 only and refuses such a frame).
    const bool even = size.width % 2 == 0 && size.height % 2 == 0;
    const AVPixelFormat format = even || !is_x264(codec) ? AV_PIX_FMT_YUV420P : AV_PIX_FMT_YUV444P;

    // The container from the destination's name; the bytes go to the temporary.
    AVFormatContext* output = nullptr;
    check(avformat_alloc_output_context2(&output, nullptr, nullptr, path.string().c_str()),
          "no container format for this name");
    output_.reset(output);
    stream_ = avformat_new_stream(output_.get(), nullptr);
    encoder_.reset(avcodec_alloc_context3(codec));
    if (stream_ == nullptr || encoder_ == nullptr) fail("out of memory");
    encoder_->width = size.width;
    encoder_->height = size.height;
    encoder_->pix_fmt = format;
    encoder_->time_base = kTimeBase;
    encoder_->framerate = av_d2q(fps, 1 << 20);
    if (tags.shown_as) {
      const DisplayAspect pixel = pixel_aspect(*tags.shown_as, size);
      av_reduce(&encoder_->sample_aspect_ratio.num, &encoder_->sample_aspect_ratio.den, pixel.width, pixel.height,
                std::numeric_limits<int>::max());
      stream_->sample_aspect_ratio = encoder_->sample_aspect_ratio;  // the container's field, which players read
    }
    // libswscale's RGB -> YUV is BT.601 in limited range: say so in the stream.
    encoder_->colorspace = AVCOL_SPC_SMPTE170M;
    encoder_->color_range = AVCOL_RANGE_MPEG;
    if (tags.color_space) {
      encoder_->color_primaries = static_cast<AVColorPrimaries>(tags.color_space->primaries);
      encoder_->color_trc = static_cast<AVColorTransferCharacteristic>(tags.color_space->transfer);
    }
    if ((output_->oformat->flags & AVFMT_GLOBALHEADER) != 0) encoder_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if (is_x264(codec)) {
      av_opt_set(encoder_->priv_data, "crf", "18", 0);  // visually lossless for most content
      av_opt_set(encoder_->priv_data, "preset", "fast", 0);
    } else {
      encoder_->flags |= AV_CODEC_FLAG_QSCALE;
      encoder_->global_quality = FF_QP2LAMBDA * 3;
    }
    check(avcodec_open2(encoder_.get(), codec, nullptr), std::string("cannot open the ") + codec->name + " encoder");
    check(avcodec_parameters_from_context(stream_->codecpar, encoder_.get()), "encoder parameters");
    stream_->time_base = kTimeBase;
    if (!audio_from.empty()) audio_.emplace(audio_from, *output_);
    check(avio_open(&output_->pb, libav::file_url(temporary_.name()).c_str(), AVIO_FLAG_WRITE),
          "cannot open for writing as video (folder missing, no permission, or disk full)");
    check(avformat_write_header(output_.get(), nullptr), "writing the video failed");

    frame_.reset(av_frame_alloc());
    packet_.reset(av_packet_alloc());
    if (frame_ == nullptr || packet_ == nullptr) fail("out of memory");
    frame_->format = format;
    frame_->width = size.width;
    frame_->height = size.height;
    check(av_frame_get_buffer(frame_.get(), 0), "frame buffer");
    to_yuv_.reset(sws_getContext(size.width, size.height, AV_PIX_FMT_RGB24, size.width, size.height, format,
                                 SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr, nullptr, nullptr));
    if (to_yuv_ == nullptr) fail("no RGB to YUV conversion for " + to_string(size));
  }

  void write(ConstFrameView frame, std::optional<double> time) override {
    if (frame.size != size_) fail("frame of " + to_string(frame.size) + " in a video of " + to_string(size_));
    check(av_frame_make_writable(frame_.get()), "frame buffer");
    const std::size_t stride = libav::padded_rgb_stride(frame.size.width);
    const std::size_t row_bytes = 3 * static_cast<std::size_t>(frame.size.width);
    padded_rows_.resize(stride * static_cast<std::size_t>(frame.size.height));
    for (int row = 0; row < frame.size.height; ++row) {
      std::memcpy(padded_rows_.data() + row * stride, frame.data + row * row_bytes, row_bytes);
    }
    // sws_scale reads four planes' pointers and strides (AV_NUM_DATA_POINTERS of them in newer releases).
    const std::uint8_t* const rgb[AV_NUM_DATA_POINTERS] = {padded_rows_.data()};
    const int rgb_stride[AV_NUM_DATA_POINTERS] = {static_cast<int>(stride)};
    sws_scale(to_yuv_.get(), rgb, rgb_stride, 0, frame.size.height, frame_->data, frame_->linesize);
    // The first frame's time is the file's 0 (as the ffmpeg command starts its outputs), else a stream cut from
    // late in its source, or a .ts whose clock starts well above 0, would begin with a long still picture.
    if (frames_ == 0) {
      if (time) {
        origin_ = std::llround(*time * kTimeBase.den);
      } else if (audio_) {
        origin_ = audio_->source_start();  // frames without times start where their source does
      }
      if (audio_) audio_->start_at(origin_);
    }
    // Each frame at its own time; one without, or whose time does not come after the one before (the encoder
    // needs rising times), a frame's length after the one before.
    std::int64_t pts = frames_ == 0 ? 0 : last_pts_ + ticks_per_frame_;
    if (time) {
      const std::int64_t own = std::llround(*time * kTimeBase.den) - origin_;
      if (frames_ == 0 || own > last_pts_) pts = own;
    }
    frame_->pts = pts;
    last_pts_ = pts;
    // The sound up to this frame's end, so that the muxer can interleave the two as it goes.
    if (audio_) copy_audio(static_cast<double>(origin_ + pts + ticks_per_frame_) / kTimeBase.den);
    encode(frame_.get());
    ++frames_;
  }

  std::string audio() const override { return audio_ ? audio_->note() : std::string(); }

  void close() override {
    encode(nullptr);  // drains the frames the encoder holds back; the sound up to their end is written
    check(av_write_trailer(output_.get()), "writing the video failed");
    check(avio_closep(&output_->pb), "writing the video failed");
    temporary_.commit(existing_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw IoError(temporary_.destination(), why); }

  void check(int code, const std::string& what) const {
    if (code < 0) fail(what + ": " + libav::error_text(code) + "; nothing was written under this name");
  }

  void copy_audio(double until_seconds) {
    try {
      audio_->copy_until(until_seconds);
    } catch (const IoError& e) {
      fail(e.reason() + "; nothing was written under this name");
    }
  }

  // Sends `frame` (nullptr: the end) and writes every packet the encoder has ready.
  void encode(const AVFrame* frame) {
    check(avcodec_send_frame(encoder_.get(), frame), "encoding frame " + std::to_string(frames_));
    for (;;) {
      const int received = avcodec_receive_packet(encoder_.get(), packet_.get());
      if (received == AVERROR(EAGAIN) || received == AVERROR_EOF) return;
      check(received, "encoding frame " + std::to_string(frames_));
      // A frame lasts until the next one's time; the last one, 1 / fps (MP4's edit list ends there).
      if (packet_->duration == 0) packet_->duration = ticks_per_frame_;
      av_packet_rescale_ts(packet_.get(), encoder_->time_base, stream_->time_base);
      packet_->stream_index = stream_->index;
      check(av_interleaved_write_frame(output_.get(), packet_.get()), "writing the video failed");
    }
  }

  TemporaryFile temporary_;
  Size size_;
  std::int64_t ticks_per_frame_;
  Existing existing_;
  std::unique_ptr<AVFormatContext, OutputDeleter> output_;
  AVStream* stream_ = nullptr;  // output_'s
  libav::Codec encoder_;
  libav::Frame frame_;
  libav::Packet packet_;
  std::unique_ptr<SwsContext, ScalerDeleter> to_yuv_;
  std::vector<std::uint8_t> padded_rows_;  // libav::padded_rgb_stride apart
  std::optional<AudioCopy> audio_;
  std::uint64_t frames_ = 0;
  std::int64_t origin_ = 0;  // the first frame's time (90 kHz ticks), or 0 where it has none
  std::int64_t last_pts_ = 0;
};

}  // namespace

bool writes_timed_video(const std::filesystem::path& path) {
  const std::string ext = lowercase_extension(path);
  return (ext == ".mp4" || ext == ".mkv" || ext == ".mov") && find_encoder() != nullptr;
}

std::string timed_video_encoder() {
  const AVCodec* codec = find_encoder();
  if (codec == nullptr) return "";
  return is_x264(codec) ? "H.264 by libx264 through FFmpeg" : "MPEG-4 Part 2 by FFmpeg";
}

std::string audio_codec_of(const std::filesystem::path& path) {
  libav::Input input;
  if (!reopens(path) || libav::open_input(path, input) < 0) return "";
  const int audio = av_find_best_stream(input.get(), AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
  return audio < 0 ? "" : avcodec_get_name(input->streams[audio]->codecpar->codec_id);
}

std::unique_ptr<FrameWriter> open_timed_video_writer(const std::filesystem::path& path, Size size, double fps,
                                                     Existing existing, const std::filesystem::path& audio_from,
                                                     const VideoDisplayTags& tags) {
  return std::make_unique<LibavVideoWriter>(path, size, fps, existing, audio_from, tags);
}

void set_encoder_logging(bool verbose) { av_log_set_level(verbose ? AV_LOG_WARNING : AV_LOG_QUIET); }

}  // namespace imgpipe::io
