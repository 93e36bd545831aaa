// Video files written through FFmpeg's libraries (open_timed_video_writer): each frame at its own time, read
// back by libavformat, the pixels close to what went in, and nothing left behind when writing fails.
#include "file_bytes.hpp"
#include "io_error.hpp"
#include "test_images.hpp"
#include "test_io_helpers.hpp"
#include "video_demux.hpp"
#include "video_encode.hpp"

#include <gtest/gtest.h>

#ifdef IMGPIPE_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#endif

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace imgpipe::testing {
namespace {

namespace fs = std::filesystem;

#define SKIP_WITHOUT_TIMED_VIDEO()                                                                     \
  if (!io::writes_timed_video("video.mkv")) GTEST_SKIP() << "this build has no FFmpeg encoder"

// `frames` distinct frames of `size`: windows into a photograph, moving a few pixels a frame.
std::vector<Image> moving_photo(Size size, int frames) {
  const Image photo = photos().front().image;
  std::vector<Image> out;
  for (int f = 0; f < frames; ++f) {
    Image frame(size);
    for (int y = 0; y < size.height; ++y) {
      for (int x = 0; x < size.width; ++x) {
        for (int c = 0; c < 3; ++c) frame.at(x, y, c) = photo.at((x + 3 * f) % photo.width(), y % photo.height(), c);
      }
    }
    out.push_back(std::move(frame));
  }
  return out;
}

void write_video(const fs::path& path, const std::vector<Image>& frames,
                 const std::vector<std::optional<double>>& times, double fps) {
  const std::unique_ptr<io::FrameWriter> writer =
      io::open_timed_video_writer(path, frames.front().size(), fps, io::Existing::keep);
  for (std::size_t f = 0; f < frames.size(); ++f) {
    writer->write(ConstFrameView(frames[f].data(), frames[f].size()), times[f]);
  }
  writer->close();
}

// The shown times of a video file's frames, in seconds and in display order, as libavformat reads them.
std::vector<double> frame_times(const fs::path& path) {
  const std::unique_ptr<io::Bitstream> stream = io::open_container(path);
  std::vector<double> times;
  while (const std::optional<io::BitstreamPiece> piece = stream->next()) {
    if (piece->pts && !piece->discard) times.push_back(static_cast<double>(*piece->pts) * stream->seconds_per_tick());
  }
  std::sort(times.begin(), times.end());
  return times;
}

#ifdef IMGPIPE_HAVE_OPENCV
// The frames OpenCV decodes from `path`, each with its PSNR against `expected` (RGB).
std::vector<double> psnr_of_frames(const fs::path& path, const std::vector<Image>& expected) {
  cv::VideoCapture capture(path.string(), cv::CAP_FFMPEG);
  std::vector<double> psnr;
  cv::Mat bgr, rgb;
  while (capture.read(bgr)) {
    if (psnr.size() == expected.size()) return {};  // more frames than were written
    const Image& want = expected[psnr.size()];
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    const cv::Mat wanted(want.height(), want.width(), CV_8UC3, const_cast<std::uint8_t*>(want.data()));
    psnr.push_back(cv::PSNR(rgb, wanted));
  }
  return psnr;
}
#endif

// Frames at 25, then 12.5, then 50 frames/s come back at those times, in MP4 and in Matroska, and the frames
// decode to what went in (libx264 at CRF 18: above 35 dB).
TEST(TimedVideoWriter, KeepsEachFramesTimeAndItsPixels) {
  SKIP_WITHOUT_TIMED_VIDEO();
  if (const std::string why = io::container_demuxing_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const std::vector<double> times = {0, 0.04, 0.08, 0.12, 0.2, 0.28, 0.36, 0.38, 0.4, 0.42, 0.44, 0.46};
  const std::vector<Image> frames = moving_photo({160, 96}, static_cast<int>(times.size()));
  for (const char* name : {"vfr.mp4", "vfr.mkv"}) {
    const fs::path path = dir.path() / name;
    write_video(path, frames, {times.begin(), times.end()}, 25);
    const std::vector<double> read = frame_times(path);
    ASSERT_EQ(read.size(), times.size()) << name;
    for (std::size_t f = 0; f < times.size(); ++f) EXPECT_NEAR(read[f], times[f], 0.0005) << name << " frame " << f;
#ifdef IMGPIPE_HAVE_OPENCV
    const std::vector<double> psnr = psnr_of_frames(path, frames);
    ASSERT_EQ(psnr.size(), frames.size()) << name;
    for (std::size_t f = 0; f < psnr.size(); ++f) EXPECT_GT(psnr[f], 35.0) << name << " frame " << f;
#endif
  }
}

// A frame without a time, or whose time does not come after the frame before's, is shown a frame's length (at
// the fps given) after that frame; a first frame without one at 0.
TEST(TimedVideoWriter, FramesWithoutRisingTimesComeAFrameApart) {
  SKIP_WITHOUT_TIMED_VIDEO();
  if (const std::string why = io::container_demuxing_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const fs::path path = dir.path() / "mixed.mkv";
  write_video(path, moving_photo({64, 48}, 6), {std::nullopt, std::nullopt, 0.5, 0.3, 0.5, std::nullopt}, 10);
  const std::vector<double> expected = {0, 0.1, 0.5, 0.6, 0.7, 0.8};
  const std::vector<double> read = frame_times(path);
  ASSERT_EQ(read.size(), expected.size());
  for (std::size_t f = 0; f < expected.size(); ++f) EXPECT_NEAR(read[f], expected[f], 0.0005) << "frame " << f;
}

// The first frame's time is the file's 0: a stream from late in its source (a .ts whose clock starts an hour in)
// does not open on a still picture that long; the frames after it keep their spacing, and the rules above.
TEST(TimedVideoWriter, StartsAtTheFirstFramesTime) {
  SKIP_WITHOUT_TIMED_VIDEO();
  if (const std::string why = io::container_demuxing_unavailable(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  for (const char* name : {"late.mp4", "late.mkv"}) {
    const fs::path path = dir.path() / name;
    write_video(path, moving_photo({64, 48}, 5), {3601.4, 3601.44, 3601.52, 3601.5, std::nullopt}, 25);
    const std::vector<double> expected = {0, 0.04, 0.12, 0.16, 0.2};
    const std::vector<double> read = frame_times(path);
    ASSERT_EQ(read.size(), expected.size()) << name;
    for (std::size_t f = 0; f < expected.size(); ++f)
      EXPECT_NEAR(read[f], expected[f], 0.0005) << name << " frame " << f;
  }
}

// An odd width or height is encoded in 4:4:4 (4:2:0 needs even ones) and decodes as closely.
TEST(TimedVideoWriter, OddSizesAreWritten) {
  SKIP_WITHOUT_TIMED_VIDEO();
  TempDir dir;
  const std::vector<Image> frames = moving_photo({161, 97}, 5);
  const fs::path path = dir.path() / "odd.mp4";
  write_video(path, frames, std::vector<std::optional<double>>(frames.size()), 30);
  ASSERT_TRUE(fs::exists(path));
#ifdef IMGPIPE_HAVE_OPENCV
  const std::vector<double> psnr = psnr_of_frames(path, frames);
  ASSERT_EQ(psnr.size(), frames.size());
  for (std::size_t f = 0; f < psnr.size(); ++f) EXPECT_GT(psnr[f], 35.0) << "frame " << f;
#endif
}

// Nothing is left under the name or as a temporary when the writer is dropped before close(), when a frame
// has the wrong size, or when the name already exists (which keeps its bytes); errors name the file.
TEST(TimedVideoWriter, LeavesNothingBehindAndNoFileReplaced) {
  SKIP_WITHOUT_TIMED_VIDEO();
  TempDir dir;
  const std::vector<Image> frames = moving_photo({64, 48}, 3);
  const auto files = [&] { return std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}); };
  {
    const auto writer = io::open_timed_video_writer(dir.path() / "dropped.mp4", {64, 48}, 25, io::Existing::keep);
    writer->write(ConstFrameView(frames[0].data(), frames[0].size()), std::nullopt);
  }
  EXPECT_EQ(files(), 0);

  const auto writer = io::open_timed_video_writer(dir.path() / "sized.mkv", {64, 48}, 25, io::Existing::keep);
  const Image other(Size{32, 48});
  try {
    writer->write(ConstFrameView(other.data(), other.size()), std::nullopt);
    ADD_FAILURE() << "a 32x48 frame went into a 64x48 video";
  } catch (const io::IoError& e) {
    EXPECT_EQ(e.path(), dir.path() / "sized.mkv");
    EXPECT_NE(std::string(e.what()).find("frame of 32x48 in a video of 64x48"), std::string::npos) << e.what();
  }

  const fs::path existing = dir.path() / "existing.mp4";
  write_bytes(existing, "keep me");
  EXPECT_THROW(write_video(existing, frames, std::vector<std::optional<double>>(frames.size()), 25), io::IoError);
  EXPECT_EQ(file_bytes(existing), std::vector<std::uint8_t>({'k', 'e', 'e', 'p', ' ', 'm', 'e'}));
  EXPECT_EQ(files(), 2);  // existing.mp4, and sized.mkv's temporary until its writer goes
}

}  // namespace
}  // namespace imgpipe::testing
