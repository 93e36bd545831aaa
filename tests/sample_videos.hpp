// The sample videos in data/video (made by data/make_data.sh) as the video tests name them.
#pragma once

#include "test_io_helpers.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>

namespace imgpipe::testing {

inline std::filesystem::path video_file(const std::string& name) {
  return std::filesystem::path(IMGPIPE_DATA_DIR) / "video" / name;
}

// When frame n (0 to 29) of clip_vfr.mkv was made, in seconds: frames 0-9 at 25 frames/s, 10-19 at 12.5, 20-29
// at 50.
inline double clip_vfr_made_at(int n) {
  return n < 10 ? n / 25.0 : n < 20 ? 0.4 + (n - 10) * 0.08 : 1.2 + (n - 20) * 0.02;
}

inline bool has_ffmpeg_command() { return std::system("command -v ffmpeg > /dev/null 2>&1") == 0; }

// clip_remuxed.mp4 copied into `folder` with its container saying to show it turned: the `rotate` tag the ffmpeg
// command writes as a display matrix, which that command then turns by (360 - `rotate_tag`) degrees clockwise
// to show it. Needs has_ffmpeg_command().
inline std::filesystem::path turned_copy(const std::filesystem::path& folder, int rotate_tag) {
  const std::filesystem::path turned = folder / ("turned" + std::to_string(rotate_tag) + ".mp4");
  const CommandResult made =
      run_command("ffmpeg", "-loglevel error -y -i " + quoted(video_file("clip_remuxed.mp4")) +
                                " -c copy -metadata:s:v:0 rotate=" + std::to_string(rotate_tag) + " " + quoted(turned));
  EXPECT_EQ(made.exit_code, 0) << made.output;
  return turned;
}

}  // namespace imgpipe::testing
