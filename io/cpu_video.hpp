// Video files decoded on the CPU by FFmpeg's libavformat, libavcodec and libswscale, where the build has them:
// every codec and container FFmpeg reads, each frame with its own presentation time, frames FFmpeg reports as
// damaged named, and RGB as `ffmpeg -i FILE -pix_fmt rgb24` makes it (the stream's colour matrix and range, a
// rotation its container declares applied).
#pragma once

#include "frame_stream.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace imgpipe::io {

// Why this build cannot decode video files through FFmpeg's libraries; empty where it can.
std::string ffmpeg_video_decoding_unavailable();

// The libavcodec decoding here ("FFmpeg's libavcodec 59.37.100"); empty where
// ffmpeg_video_decoding_unavailable() is not.
std::string ffmpeg_video_decoder_version();

// Opens `path` at its best video stream. Throws IoError naming the file when it cannot be opened or holds no
// video FFmpeg decodes, and PixelLimitError when the frame size it declares (turned by its rotation) exceeds
// `max_pixels`, before any frame is decoded. With `cancel_fd` >= 0, a FIFO or a pipe that stalls (a live feed)
// is waited on together with `cancel_fd`, as is a URL's connection, and once that is readable the reader stops as
// RawFrameReader does (StreamCancelled, or the end of the frames). ffmpeg_video_decoding_unavailable() must be empty.
std::unique_ptr<FrameReader> open_ffmpeg_video_reader(const std::filesystem::path& path,
                                                      std::uint64_t max_pixels = kDefaultMaxPixels, int cancel_fd = -1);

}  // namespace imgpipe::io
