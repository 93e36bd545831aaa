// Containers demuxed for NVDEC (io/video_demux.hpp), on the CPU: the Annex B stream and the timestamps that
// libavformat and FFmpeg's bitstream filters hand out for the sample clips in data/video, against the
// elementary stream the MP4 was muxed from and the times the variable-rate clip was made with.
#include "sample_videos.hpp"
#include "test_images.hpp"
#include "test_io_helpers.hpp"
#include "video_demux.hpp"
#include "video_encode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace imgpipe::testing {
namespace {

namespace fs = std::filesystem;

#define SKIP_WITHOUT_LIBAVFORMAT()                                                                     \
  if (const std::string why = io::container_demuxing_unavailable(); !why.empty()) GTEST_SKIP() << why

struct Demuxed {
  std::vector<std::uint8_t> bytes;  // the pieces back to back
  std::vector<std::int64_t> pts;    // in decoding order
  std::vector<bool> discard;
  std::size_t pieces_without_start_code = 0;
};

Demuxed demux(io::Bitstream& stream) {
  Demuxed out;
  while (const std::optional<io::BitstreamPiece> piece = stream.next()) {
    const auto b = piece->bytes;
    const bool start_code = b.size() >= 4 && b[0] == 0 && b[1] == 0 && (b[2] == 1 || (b[2] == 0 && b[3] == 1));
    if (!start_code) ++out.pieces_without_start_code;
    out.bytes.insert(out.bytes.end(), b.begin(), b.end());
    EXPECT_TRUE(piece->pts.has_value());
    out.pts.push_back(piece->pts.value_or(0));
    out.discard.push_back(piece->discard);
  }
  return out;
}

// clip_remuxed.mp4 is clip.h264 put into MP4 by `ffmpeg -c copy`: the filter gives back the very stream, and
// the muxer's edit list, which starts the video at the third packet, flags the first two as not shown.
TEST(ContainerDemux, RemuxedMp4GivesBackItsElementaryStreamAndFlagsWhatItsEditListHides) {
  SKIP_WITHOUT_LIBAVFORMAT();
  const std::unique_ptr<io::Bitstream> stream = io::open_container(video_file("clip_remuxed.mp4"));
  EXPECT_EQ(stream->codec(), io::VideoCodec::h264);
  EXPECT_NE(stream->container().find("QuickTime"), std::string::npos) << stream->container();
  EXPECT_EQ(stream->frame_rate().value_or(0), 25.0);
  const Demuxed demuxed = demux(*stream);
  EXPECT_EQ(demuxed.pieces_without_start_code, 0u);
  EXPECT_EQ(demuxed.bytes, file_bytes(video_file("clip.h264")));
  ASSERT_EQ(demuxed.pts.size(), 30u);
  for (std::size_t n = 0; n < demuxed.pts.size(); ++n) {
    EXPECT_EQ(demuxed.discard[n], n < 2) << "packet " << n;
    // The raw stream had no presentation times: the muxer gave each packet its decoding time, 1/25 s apart.
    EXPECT_NEAR(static_cast<double>(demuxed.pts[n]) * stream->seconds_per_tick(), (static_cast<double>(n) - 2) / 25,
                1e-9);
  }
}

// clip_vfr.mkv: HEVC with B-frames, frames 0-9 at 25 frames/s, 10-19 at 12.5, 20-29 at 50 (data/make_data.sh).
TEST(ContainerDemux, VariableRateMatroskaCarriesEachPicturesTime) {
  SKIP_WITHOUT_LIBAVFORMAT();
  const std::unique_ptr<io::Bitstream> stream = io::open_container(video_file("clip_vfr.mkv"));
  EXPECT_EQ(stream->codec(), io::VideoCodec::hevc);
  EXPECT_NE(stream->container().find("Matroska"), std::string::npos) << stream->container();
  Demuxed demuxed = demux(*stream);
  EXPECT_EQ(demuxed.pieces_without_start_code, 0u);
  EXPECT_TRUE(std::ranges::none_of(demuxed.discard, [](bool d) { return d; }));
  ASSERT_EQ(demuxed.pts.size(), 30u);
  EXPECT_FALSE(std::ranges::is_sorted(demuxed.pts)) << "B-frames come before the pictures they are shown after";
  std::ranges::sort(demuxed.pts);
  for (int n = 0; n < 30; ++n) {
    const double made_at = clip_vfr_made_at(n);
    EXPECT_NEAR(static_cast<double>(demuxed.pts[n]) * stream->seconds_per_tick(), made_at, 1e-9) << "frame " << n;
  }
}

// A container's Annex B read through BitstreamBuffer is cut by AnnexBSplitter as the file would be
// (clip.h264 has an IDR picture every 12 frames), and each chunk takes its own pictures' timings.
TEST(ContainerDemux, ChunksOfAContainerTakeTheirPicturesTimings) {
  SKIP_WITHOUT_LIBAVFORMAT();
  const std::unique_ptr<io::Bitstream> stream = io::open_container(video_file("clip_remuxed.mp4"));
  io::BitstreamBuffer buffer(*stream);
  std::istream bytes(&buffer);
  bytes.exceptions(std::ios::badbit);
  io::AnnexBSplitter splitter(bytes, "clip_remuxed.mp4", io::VideoCodec::h264, 1);
  std::vector<std::uint8_t> stream_bytes;
  std::vector<std::uint64_t> pictures;
  std::vector<std::int64_t> pts;
  while (const std::optional<io::StreamChunk> chunk = splitter.next()) {
    stream_bytes.insert(stream_bytes.end(), chunk->bytes.begin() + static_cast<std::ptrdiff_t>(chunk->header_bytes),
                        chunk->bytes.end());
    pictures.push_back(chunk->pictures);
    const std::vector<io::PacketTiming> timings = buffer.take_timings(chunk->pictures);
    EXPECT_EQ(timings.size(), chunk->pictures);
    for (const io::PacketTiming& t : timings) {
      pts.push_back(t.pts.value_or(-1));
      EXPECT_EQ(t.discard, pts.size() <= 2) << "packet " << pts.size() - 1;
    }
  }
  EXPECT_EQ(stream_bytes, file_bytes(video_file("clip.h264")));
  EXPECT_EQ(pictures, (std::vector<std::uint64_t>{12, 12, 6}));
  ASSERT_EQ(pts.size(), 30u);
  for (std::size_t n = 0; n < pts.size(); ++n) {
    EXPECT_NEAR(static_cast<double>(pts[n]) * stream->seconds_per_tick(), (static_cast<double>(n) - 2) / 25, 1e-9);
  }
  EXPECT_TRUE(buffer.take_timings(1).empty());
}

// Only the demuxer's log tells a file cut short from a whole one: the reader passes on what it logged.
TEST(ContainerDemux, AContainerCutShortIsReportedAndWholeOnesAreNot) {
  SKIP_WITHOUT_LIBAVFORMAT();
  io::set_demuxer_logging(false);
  TempDir dir;
  for (const char* clip : {"clip_open_gop.mp4", "clip_remuxed.mp4"}) {
    const std::unique_ptr<io::Bitstream> whole = io::open_container(video_file(clip));
    demux(*whole);
    EXPECT_EQ(whole->container_damage(), "") << clip;
  }
  // Files whose index comes first (an MP4 made with +faststart), so that the first 60% opens.
  for (const char* clip : {"clip.mp4", "clip_vfr.mkv"}) {
    const std::unique_ptr<io::Bitstream> whole = io::open_container(video_file(clip));
    const std::size_t whole_pictures = demux(*whole).pts.size();
    EXPECT_EQ(whole->container_damage(), "") << clip;
    const std::vector<std::uint8_t> data = file_bytes(video_file(clip));
    const fs::path cut = dir.path() / (std::string("cut_") + clip);
    write_bytes(cut, std::string(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(data.size() * 6 / 10)));
    const std::unique_ptr<io::Bitstream> stream = io::open_container(cut);
    const std::size_t pictures = demux(*stream).pts.size();
    EXPECT_NE(stream->container_damage(), "") << clip;
    EXPECT_GT(pictures, 0u) << clip;
    EXPECT_LT(pictures, whole_pictures) << clip;
  }
}

// Random bytes over the middle of an MP4 break the length fields of its NAL units: the packets the filter cannot
// parse are skipped and named, and the pictures after them still come out.
TEST(ContainerDemux, PacketsTooDamagedToParseAreSkippedAndTheRestRead) {
  SKIP_WITHOUT_LIBAVFORMAT();
  io::set_demuxer_logging(false);
  TempDir dir;
  std::vector<std::uint8_t> data = file_bytes(video_file("clip.mp4"));
  std::mt19937 random(7);
  for (std::size_t i = data.size() / 2; i < data.size() / 2 + 3000; ++i) data[i] = static_cast<std::uint8_t>(random());
  const fs::path damaged = dir.path() / "damaged.mp4";
  write_bytes(damaged, std::string(data.begin(), data.end()));
  const std::unique_ptr<io::Bitstream> stream = io::open_container(damaged);
  const std::size_t pictures = demux(*stream).pts.size();
  EXPECT_NE(stream->container_damage().find("skipped"), std::string::npos) << stream->container_damage();
  EXPECT_GT(pictures, 100u) << "of 114";
}

// NVDEC's demuxer reads the shape an anamorphic video is shown in as the CPU reader does; square pixels say none.
TEST(ContainerDemux, AnAnamorphicVideosShapeIsRead) {
  SKIP_WITHOUT_LIBAVFORMAT();
  if (!io::writes_timed_video("video.mkv")) GTEST_SKIP() << "this build has no FFmpeg encoder";
  TempDir dir;
  const Image frame = random_image({360, 240}, 4);
  for (const std::optional<DisplayAspect> shape :
       {std::optional(DisplayAspect{16, 9}), std::optional<DisplayAspect>()}) {
    const fs::path path = dir.path() / (shape ? "wide.mp4" : "square.mp4");
    const std::unique_ptr<io::FrameWriter> writer =
        io::open_timed_video_writer(path, frame.size(), 25, io::Existing::keep, {}, {shape, std::nullopt});
    writer->write(frame.view(), std::nullopt);
    writer->close();
    EXPECT_EQ(io::open_container(path)->display_aspect(), shape);
  }
  EXPECT_EQ(io::open_container(video_file("clip.mp4"))->display_aspect(), std::nullopt);
}

// NVDEC's demuxer reads a container's colour space as the CPU reader does.
TEST(ContainerDemux, AVideosColorSpaceIsRead) {
  SKIP_WITHOUT_LIBAVFORMAT();
  EXPECT_EQ(io::open_container(video_file("clip_vfr.mkv"))->rgb_color_space(), (io::RgbColorSpace{1, 1}));
  EXPECT_EQ(io::open_container(video_file("clip.mp4"))->rgb_color_space(), std::nullopt);  // a matrix only
  if (!io::writes_timed_video("video.mkv")) GTEST_SKIP() << "this build has no FFmpeg encoder";
  TempDir dir;
  const fs::path path = dir.path() / "hdr.mp4";
  const Image frame = random_image({64, 48}, 4);
  const std::unique_ptr<io::FrameWriter> writer = io::open_timed_video_writer(
      path, frame.size(), 25, io::Existing::keep, {}, {std::nullopt, io::RgbColorSpace{9, 16}});
  writer->write(frame.view(), std::nullopt);
  writer->close();
  EXPECT_EQ(io::open_container(path)->rgb_color_space(), (io::RgbColorSpace{9, 16}));
}

TEST(ContainerDemux, ElementaryStreamsComeInReadsOfTheirBytesWithoutTimes) {
  const std::unique_ptr<io::Bitstream> stream =
      io::open_elementary_stream(video_file("clip.hevc"), io::VideoCodec::hevc, 4096);
  EXPECT_EQ(stream->codec(), io::VideoCodec::hevc);
  EXPECT_EQ(stream->container(), "");
  std::vector<std::uint8_t> bytes;
  while (const std::optional<io::BitstreamPiece> piece = stream->next()) {
    EXPECT_LE(piece->bytes.size(), 4096u);
    EXPECT_FALSE(piece->pts);
    bytes.insert(bytes.end(), piece->bytes.begin(), piece->bytes.end());
  }
  EXPECT_EQ(bytes, file_bytes(video_file("clip.hevc")));
  EXPECT_THROW(io::open_elementary_stream("/nonexistent/clip.h264", io::VideoCodec::h264), io::IoError);
}

// Errors name the file: one that is not there, one that is no container, one cut short before its index (the
// remuxed MP4 keeps it at the end), and one whose video is neither H.264 nor HEVC.
TEST(ContainerDemux, FilesItCannotTakeAreErrorsNamingThem) {
  SKIP_WITHOUT_LIBAVFORMAT();
  TempDir dir;
  const std::vector<std::uint8_t> mp4 = file_bytes(video_file("clip_remuxed.mp4"));
  write_bytes(dir.path() / "cut short.mp4", std::string(mp4.begin(), mp4.begin() + mp4.size() / 2));
  write_bytes(dir.path() / "notes.mp4", std::string(1000, 'x'));
  for (const fs::path& path : {fs::path("/nonexistent/clip.mp4"), dir.path() / "cut short.mp4", dir.path() / "notes.mp4"}) {
    try {
      io::open_container(path);
      ADD_FAILURE() << path << " opened";
    } catch (const io::UnsupportedVideoStream& e) {
      ADD_FAILURE() << "refused as a stream instead of failing as a file: " << e.what();
    } catch (const io::IoError& e) {
      EXPECT_EQ(e.path(), path) << e.what();
    }
  }
  try {
    io::open_container(fs::path(IMGPIPE_DATA_DIR) / "images" / "astronaut.jpg");
    ADD_FAILURE() << "a JPEG opened as H.264 or HEVC";
  } catch (const io::UnsupportedVideoStream& e) {
    EXPECT_NE(e.reason().find("mjpeg"), std::string::npos) << e.what();
  }
}

// A container that says to show its video turned (a phone's portrait video) is left to the CPU decoder, which
// turns it; NVDEC's path would give the frames on their side.
TEST(ContainerDemux, AVideoItsContainerShowsTurnedIsLeftToTheCpuDecoder) {
  SKIP_WITHOUT_LIBAVFORMAT();
  if (!has_ffmpeg_command()) GTEST_SKIP() << "no ffmpeg command here to make the turned file with";
  TempDir dir;
  for (const int tag : {90, 180, 270}) {
    const fs::path turned = turned_copy(dir.path(), tag);
    try {
      io::open_container(turned);
      ADD_FAILURE() << "a turned video went to NVDEC's path";
    } catch (const io::UnsupportedVideoStream& e) {
      EXPECT_EQ(e.reason(), "its container shows the video turned " + std::to_string(360 - tag) +
                                " degrees clockwise, which NVDEC's path does not do");
    }
  }
}

}  // namespace
}  // namespace imgpipe::testing
