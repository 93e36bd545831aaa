// Video files that keep each frame's time: written through FFmpeg's libavformat and libavcodec where the build
// has them (with libswscale), so that a stream of variable frame rate stays one.
#pragma once

#include "file_bytes.hpp"
#include "frame_stream.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace imgpipe::io {

// Whether open_timed_video_writer takes this name: an .mp4, .mkv or .mov file, in a build with FFmpeg's
// libraries and an encoder in them.
bool writes_timed_video(const std::filesystem::path& path);

// The encoder open_timed_video_writer uses ("H.264 by libx264 through FFmpeg"), or empty where there is none.
std::string timed_video_encoder();

// Writes frames of `size` under a temporary name in the same folder, each at the time write() gives it less
// the first frame's (the file starts at 0), or 1 / `fps` after the frame before when it has none or its time
// does not come after that frame's; close() finishes the container and renames it to `path` (never over an
// existing file with Existing::keep). Any failure throws IoError naming `path`; nothing is left under `path`
// and the temporary is removed. H.264 by libx264 (CRF 18, 4:2:0, or 4:4:4 for an odd width or height) where
// FFmpeg has it, else MPEG-4 Part 2; the frames go to BT.601 limited-range YUV by libswscale, tagged so. With
// `audio_from` (the video file the frames were decoded from), its best audio stream is copied beside the
// frames as it is, each packet at its time in that file less the first frame's (packets before that frame are
// left out), up to the last frame's end, where the output's container takes its codec (FrameWriter::audio()
// says). With tags.shown_as, the frames' pixels are declared as wide as it takes to show them in that shape (an
// anamorphic video's sample aspect ratio); tags.color_space is declared in the stream's headers and the
// container. writes_timed_video(path) must hold.
std::unique_ptr<FrameWriter> open_timed_video_writer(const std::filesystem::path& path, Size size, double fps,
                                                     Existing existing, const std::filesystem::path& audio_from = {},
                                                     const VideoDisplayTags& tags = {});

// The codec of the best audio stream of `path` ("aac"), where FFmpeg's libraries can tell; empty otherwise, and
// for a pipe or a FIFO, which only the video's reader may read.
std::string audio_codec_of(const std::filesystem::path& path);

// FFmpeg's messages (libx264 reports its settings and statistics per file): its warnings with `verbose`, else
// none.
void set_encoder_logging(bool verbose);

}  // namespace imgpipe::io
