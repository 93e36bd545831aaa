// The sample videos in data/video (made by data/make_data.sh) as the video tests name them.
#pragma once

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

}  // namespace imgpipe::testing
