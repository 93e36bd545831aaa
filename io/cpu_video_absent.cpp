// A build without FFmpeg's libavformat, libavcodec or libswscale: video files are decoded by OpenCV alone.
#include "cpu_video.hpp"

#include <stdexcept>

namespace imgpipe::io {

std::string ffmpeg_video_decoding_unavailable() {
  return "this build has no FFmpeg libraries to decode video with (install libavformat-dev, libavcodec-dev and "
         "libswscale-dev and rebuild)";
}

std::string ffmpeg_video_decoder_version() { return {}; }

std::unique_ptr<FrameReader> open_ffmpeg_video_reader(const std::filesystem::path&, std::uint64_t, int) {
  throw std::logic_error("open_ffmpeg_video_reader: " + ffmpeg_video_decoding_unavailable());
}

}  // namespace imgpipe::io
