// A build without FFmpeg's libavformat, libavcodec or libswscale: video files are written by OpenCV alone, at a
// constant frame rate.
#include "video_encode.hpp"

#include <stdexcept>

namespace imgpipe::io {

bool writes_timed_video(const std::filesystem::path&) { return false; }

std::string timed_video_encoder() { return ""; }

std::string audio_codec_of(const std::filesystem::path&) { return ""; }

std::unique_ptr<FrameWriter> open_timed_video_writer(const std::filesystem::path&, Size, double, Existing,
                                                     const std::filesystem::path&, const VideoDisplayTags&) {
  throw std::logic_error("open_timed_video_writer: this build has no FFmpeg encoder (writes_timed_video is false)");
}

void set_encoder_logging(bool) {}

}  // namespace imgpipe::io
