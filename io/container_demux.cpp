// Containers through libavformat: the file's best video stream, its packets in decoding order, turned into
// Annex B by FFmpeg's h264_mp4toannexb / hevc_mp4toannexb (which pass streams already in Annex B, as MPEG-TS
// carries them, through unchanged). libavformat applies MP4 edit lists itself: pictures before the edit's
// start keep their packets, flagged AV_PKT_FLAG_DISCARD, because later pictures may refer to them; the decoder
// decodes them and shows none of them, as FFmpeg's own decoders do.
#include "video_demux.hpp"

#include "libav_log.hpp"
#include "libav_support.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <libavutil/log.h>
}

#include <memory>
#include <mutex>
#include <optional>

namespace imgpipe::io {
namespace {

struct FilterFreer {
  void operator()(AVBSFContext* filter) const { av_bsf_free(&filter); }
};

std::optional<double> rate_of(AVRational rate) {
  if (rate.num <= 0 || rate.den <= 0) return std::nullopt;
  return av_q2d(rate);
}

class ContainerStream final : public Bitstream {
 public:
  explicit ContainerStream(const std::filesystem::path& path) : path_(path) {
    if (const int error = libav::open_input(path, format_, &log_); error < 0) {
      throw IoError(path, "cannot be opened as a video container: " + libav::error_text(error));
    }
    stream_ = av_find_best_stream(format_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    if (stream_ < 0) throw UnsupportedVideoStream(path, "the file holds no video stream");
    const AVStream& video = *format_->streams[stream_];
    const AVCodecID id = video.codecpar->codec_id;
    if (id != AV_CODEC_ID_H264 && id != AV_CODEC_ID_HEVC) {
      throw UnsupportedVideoStream(path, std::string("its video is ") + avcodec_get_name(id) +
                                             "; NVDEC's path takes H.264 and HEVC");
    }
    if (const int turns = libav::clockwise_quarter_turns(video); turns != 0) {
      throw UnsupportedVideoStream(path, "its container shows the video turned " + std::to_string(90 * turns) +
                                             " degrees clockwise, which NVDEC's path does not do");
    }
    codec_ = id == AV_CODEC_ID_H264 ? VideoCodec::h264 : VideoCodec::hevc;
    display_aspect_ = libav::anamorphic_display_aspect(*format_, *format_->streams[stream_]);
    rgb_color_space_ = libav::declared_rgb_color_space(video);
    seconds_per_tick_ = av_q2d(video.time_base);
    frame_rate_ = rate_of(video.avg_frame_rate);
    if (!frame_rate_) frame_rate_ = rate_of(video.r_frame_rate);
    container_ = format_->iformat->long_name != nullptr ? format_->iformat->long_name : format_->iformat->name;

    const AVBitStreamFilter* to_annexb =
        av_bsf_get_by_name(codec_ == VideoCodec::h264 ? "h264_mp4toannexb" : "hevc_mp4toannexb");
    AVBSFContext* made = nullptr;
    if (to_annexb == nullptr || av_bsf_alloc(to_annexb, &made) < 0) {
      throw IoError(path, "FFmpeg's Annex B bitstream filter is missing from libavcodec");
    }
    filter_.reset(made);
    if (const int error = avcodec_parameters_copy(filter_->par_in, video.codecpar); error < 0) {
      throw IoError(path, "its video's parameters cannot be read: " + libav::error_text(error));
    }
    filter_->time_base_in = video.time_base;
    if (const int error = av_bsf_init(filter_.get()); error < 0) {
      throw IoError(path, "its video cannot be turned into an Annex B stream: " + libav::error_text(error));
    }
  }

  VideoCodec codec() const override { return codec_; }
  double seconds_per_tick() const override { return seconds_per_tick_; }
  std::optional<double> frame_rate() const override { return frame_rate_; }
  bool pieces_are_pictures() const override { return true; }
  std::string container() const override { return container_; }
  std::optional<DisplayAspect> display_aspect() const override { return display_aspect_; }
  std::optional<RgbColorSpace> rgb_color_space() const override { return rgb_color_space_; }
  std::string container_damage() const override {
    std::string damage = log_.demuxer_error();
    const std::lock_guard lock(mutex_);
    if (packets_skipped_ > 0) {
      damage += (damage.empty() ? "" : "; ") + std::to_string(packets_skipped_) + " packet" +
                (packets_skipped_ == 1 ? "" : "s") + " that could not be turned into Annex B skipped (" +
                first_skip_reason_ + ")";
    }
    return damage;
  }

  std::optional<BitstreamPiece> next() override {
    libav::ReaderLog::listen();
    av_packet_unref(filtered_.get());
    while (true) {
      const int got = av_bsf_receive_packet(filter_.get(), filtered_.get());
      if (got == 0) {
        return BitstreamPiece{{filtered_->data, static_cast<std::size_t>(filtered_->size)},
                              filtered_->pts == AV_NOPTS_VALUE ? std::nullopt : std::optional(filtered_->pts),
                              (filtered_->flags & AV_PKT_FLAG_DISCARD) != 0};
      }
      if (got == AVERROR_EOF) return std::nullopt;
      if (got != AVERROR(EAGAIN)) {
        // A packet the filter cannot parse (a sample cut short, a damaged NAL length): NVDEC goes on without it,
        // as FFmpeg's decoders go on past a packet they refuse.
        const std::lock_guard lock(mutex_);
        if (packets_skipped_++ == 0) first_skip_reason_ = libav::error_text(got);
        continue;
      }
      feed_filter();
    }
  }

 private:
  // Hands the filter the video stream's next packet, or its end.
  void feed_filter() {
    while (true) {
      const int read = av_read_frame(format_.get(), demuxed_.get());
      if (read == AVERROR_EOF) {
        av_bsf_send_packet(filter_.get(), nullptr);
        return;
      }
      if (read < 0) throw IoError(path_, "reading failed: " + libav::error_text(read));
      if (demuxed_->stream_index != stream_) {
        av_packet_unref(demuxed_.get());
        continue;
      }
      const int sent = av_bsf_send_packet(filter_.get(), demuxed_.get());  // takes the packet's data
      av_packet_unref(demuxed_.get());
      if (sent < 0) throw IoError(path_, "a video packet cannot be filtered: " + libav::error_text(sent));
      return;
    }
  }

  std::filesystem::path path_;
  libav::ReaderLog log_;  // outlives format_, which logs to it
  libav::Input format_;
  std::unique_ptr<AVBSFContext, FilterFreer> filter_;
  libav::Packet demuxed_ = libav::make_packet();
  libav::Packet filtered_ = libav::make_packet();
  int stream_ = -1;
  VideoCodec codec_ = VideoCodec::h264;
  double seconds_per_tick_ = 0;
  std::optional<double> frame_rate_;
  std::string container_;
  std::optional<DisplayAspect> display_aspect_;
  std::optional<RgbColorSpace> rgb_color_space_;
  mutable std::mutex mutex_;  // the skipped packets are counted on the decoder's thread
  std::uint64_t packets_skipped_ = 0;
  std::string first_skip_reason_;
};

}  // namespace

std::string container_demuxing_unavailable() { return {}; }

std::unique_ptr<Bitstream> open_container(const std::filesystem::path& path) {
  return std::make_unique<ContainerStream>(path);
}

void set_demuxer_logging(bool verbose) { av_log_set_level(verbose ? AV_LOG_WARNING : AV_LOG_QUIET); }

}  // namespace imgpipe::io
