// Video files decoded on the CPU through FFmpeg's libraries (io/cpu_video.hpp): the ffmpeg command's RGB byte for
// byte, OpenCV's frames where OpenCV reads the colours the same way, each frame's own time, the container's
// rotation as ffmpeg applies it, and damaged streams read to their end with the damaged frames named.
#include "cpu_video.hpp"
#include "library_logging.hpp"
#include "ppm.hpp"
#include "reference.hpp"
#include "sample_videos.hpp"
#include "test_images.hpp"
#include "test_io_helpers.hpp"
#include "video_encode.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>

#ifdef IMGPIPE_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>
#endif

namespace imgpipe::testing {
namespace {

namespace fs = std::filesystem;

// Skips without FFmpeg's libraries; quiets FFmpeg's own messages about the damaged streams below.
#define SKIP_WITHOUT_FFMPEG_DECODING()                                                                    \
  if (const std::string why = io::ffmpeg_video_decoding_unavailable(); !why.empty()) GTEST_SKIP() << why; \
  io::set_library_logging(false)

constexpr std::uint8_t kPoison = 0xA5;

struct DecodedVideo {
  std::vector<Image> frames;
  std::vector<std::optional<double>> times;
  std::vector<std::uint64_t> corrupt;
  std::string container_damage;
  std::string decoder;
};

// Every frame of `path`, each read into a buffer poisoned first.
DecodedVideo decode(const fs::path& path) {
  const std::unique_ptr<io::FrameReader> reader = io::open_ffmpeg_video_reader(path);
  DecodedVideo video;
  while (const std::optional<Size> size = reader->next_size()) {
    video.times.push_back(reader->frame_time());
    Image frame(*size);
    std::memset(frame.data(), kPoison, size->rgb_bytes());
    reader->read(frame.view());
    video.frames.push_back(std::move(frame));
  }
  video.corrupt = reader->corrupt_frames();
  video.container_damage = reader->container_damage();
  video.decoder = reader->decoder();
  return video;
}

// How many bytes of `a` and `b` differ, and by how much at most; sizes must match.
struct Difference {
  std::size_t bytes = 0;
  int largest = 0;
};
Difference difference(const Image& a, const Image& b) {
  Difference d;
  for (std::size_t i = 0; i < a.size().rgb_bytes(); ++i) {
    const int delta = std::abs(a.data()[i] - b.data()[i]);
    d.bytes += delta != 0;
    d.largest = std::max(d.largest, delta);
  }
  return d;
}

// Frames 0, 14 and 29 of the elementary streams as `ffmpeg -pix_fmt rgb24` made them (data/make_data.sh): the
// H.264 clip is BT.601 limited range, the HEVC clip BT.709 full range.
TEST(CpuVideo, FramesAreTheFfmpegCommandsRgbByteForByte) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  for (const char* clip : {"clip.h264", "clip.hevc"}) {
    const DecodedVideo video = decode(video_file(clip));
    ASSERT_EQ(video.frames.size(), 30u) << clip;
    for (const int n : {0, 14, 29}) {
      const Image expected =
          io::read_ppm(video_file("ffmpeg_rgb") / (std::string(clip) + "." + std::to_string(n) + ".ppm"));
      ASSERT_EQ(video.frames[n].size(), expected.size()) << clip << " frame " << n;
      const Difference d = difference(video.frames[n], expected);
      EXPECT_EQ(d.bytes, 0u) << clip << " frame " << n << ": up to " << d.largest << " levels apart";
    }
    EXPECT_TRUE(video.corrupt.empty()) << clip;
  }
}

// Every frame of every sample clip, of a 10-bit copy of the HEVC one and of a copy its container shows turned,
// against the ffmpeg command's own RGB of the same file (`-fps_mode passthrough`: every frame the decoder shows,
// none repeated or dropped), byte for byte.
TEST(CpuVideo, EveryFrameIsTheFfmpegCommandsRgb) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  if (!has_ffmpeg_command()) GTEST_SKIP() << "no ffmpeg command here to compare with";
  TempDir dir;
  const fs::path ten_bit = dir.path() / "ten_bit.mkv";
  const CommandResult made =
      run_command("ffmpeg", "-loglevel error -i " + quoted(video_file("clip.hevc")) +
                                " -c:v libx265 -pix_fmt yuv420p10le -x265-params log-level=error " + quoted(ten_bit));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  std::vector<fs::path> clips = {ten_bit, turned_copy(dir.path(), 90)};
  for (const char* name : {"clip.h264", "clip.hevc", "clip.mp4", "clip_open_gop.hevc", "clip_open_gop.mp4",
                           "clip_remuxed.mp4", "clip_vfr.mkv"}) {
    clips.push_back(video_file(name));
  }
  for (const fs::path& clip : clips) {
    const fs::path rgb = dir.path() / "ffmpeg.rgb";
    const CommandResult ffmpeg =
        run_command("ffmpeg", "-loglevel quiet -y -i " + quoted(clip) +
                                  " -fps_mode passthrough -f rawvideo -pix_fmt rgb24 " + quoted(rgb));
    ASSERT_EQ(ffmpeg.exit_code, 0) << clip << ffmpeg.output;
    const std::vector<std::uint8_t> expected = file_bytes(rgb);
    const DecodedVideo video = decode(clip);
    std::size_t bytes = 0;
    for (const Image& frame : video.frames) {
      ASSERT_LE(bytes + frame.size().rgb_bytes(), expected.size()) << clip << ": more frames than ffmpeg's";
      EXPECT_TRUE(std::equal(frame.data(), frame.data() + frame.size().rgb_bytes(), expected.begin() + bytes))
          << clip << " frame " << bytes / frame.size().rgb_bytes();
      bytes += frame.size().rgb_bytes();
    }
    EXPECT_EQ(bytes, expected.size()) << clip << ": fewer frames than ffmpeg's";
  }
}

#ifdef IMGPIPE_HAVE_OPENCV
std::vector<Image> opencv_frames(const fs::path& path) {
  cv::VideoCapture capture(path.string(), cv::CAP_FFMPEG);
  std::vector<Image> frames;
  cv::Mat bgr;
  while (capture.read(bgr)) {
    Image frame({bgr.cols, bgr.rows});
    cv::Mat rgb(bgr.rows, bgr.cols, CV_8UC3, frame.data());
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    frames.push_back(std::move(frame));
  }
  return frames;
}

// The frames OpenCV's VideoCapture shows, no more and no fewer, MP4 edit lists and open GOPs included; where the
// stream is BT.601 (the matrix OpenCV assumes for every stream) they are the same bytes. The BT.709 clips differ
// by the matrix: OpenCV reads them as BT.601.
TEST(CpuVideo, TheFramesOpenCvShowsAndItsBytesForBt601Streams) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  struct Clip {
    const char* name;
    bool bt601;
  };
  for (const Clip clip :
       {Clip{"clip.h264", true}, Clip{"clip.mp4", true}, Clip{"clip_remuxed.mp4", true}, Clip{"clip.hevc", false},
        Clip{"clip_vfr.mkv", false}, Clip{"clip_open_gop.hevc", false}, Clip{"clip_open_gop.mp4", false}}) {
    const DecodedVideo video = decode(video_file(clip.name));
    const std::vector<Image> expected = opencv_frames(video_file(clip.name));
    ASSERT_EQ(video.frames.size(), expected.size()) << clip.name;
    for (std::size_t n = 0; n < expected.size(); ++n) {
      ASSERT_EQ(video.frames[n].size(), expected[n].size()) << clip.name << " frame " << n;
      const Difference d = difference(video.frames[n], expected[n]);
      if (clip.bt601) {
        EXPECT_EQ(d.bytes, 0u) << clip.name << " frame " << n << ": up to " << d.largest << " apart";
      }
    }
  }
}
#endif

// clip_vfr.mkv: 25, then 12.5, then 50 frames/s; each frame comes out at its own time. An elementary stream
// carries no times. How many frames a file holds, for the progress line: MP4's count, else length times rate.
TEST(CpuVideo, EachFrameKeepsItsOwnTime) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  const DecodedVideo vfr = decode(video_file("clip_vfr.mkv"));
  ASSERT_EQ(vfr.times.size(), 30u);
  for (int n = 0; n < 30; ++n) {
    ASSERT_TRUE(vfr.times[n].has_value()) << "frame " << n;
    EXPECT_NEAR(*vfr.times[n], clip_vfr_made_at(n), 1e-9) << "frame " << n;
  }
  EXPECT_TRUE(vfr.decoder.find("hevc decoder, demuxed from Matroska") != std::string::npos) << vfr.decoder;
  EXPECT_EQ(io::open_ffmpeg_video_reader(video_file("clip.mp4"))->frames_expected().value_or(0), 114u)
      << "the count MP4 keeps";
  // Matroska keeps no count: 1.42 s at the 25 frames/s it declares, where its variable rate shows 30.
  EXPECT_EQ(io::open_ffmpeg_video_reader(video_file("clip_vfr.mkv"))->frames_expected().value_or(0), 36u);
  const std::unique_ptr<io::FrameReader> elementary = io::open_ffmpeg_video_reader(video_file("clip.h264"));
  ASSERT_TRUE(elementary->next_size().has_value());
  EXPECT_FALSE(elementary->frame_time().has_value());
  EXPECT_EQ(elementary->frame_rate().value_or(0), 25.0);
}

// A container that says its video is shown turned (the display matrix of a phone's video) is turned upright,
// as the ffmpeg command turns it: every frame is the unturned frame rotated, and the first is ffmpeg's own.
// (OpenCV 4.6 turns 90 and 270 the other way.)
TEST(CpuVideo, TheRotationTheContainerDeclaresIsApplied) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  if (!has_ffmpeg_command()) GTEST_SKIP() << "no ffmpeg command here to make the turned files with";
  TempDir dir;
  const DecodedVideo upright = decode(video_file("clip_remuxed.mp4"));
  for (const int tag : {90, 180, 270}) {
    const fs::path turned = turned_copy(dir.path(), tag);
    const fs::path first = dir.path() / ("first" + std::to_string(tag) + ".ppm");
    const CommandResult made =
        run_command("ffmpeg", "-loglevel error -i " + quoted(turned) + " -frames:v 1 -pix_fmt rgb24 " + quoted(first));
    ASSERT_EQ(made.exit_code, 0) << made.output;
    const DecodedVideo video = decode(turned);
    ASSERT_EQ(video.frames.size(), upright.frames.size()) << tag;
    const int clockwise = 360 - tag;  // checked against the ffmpeg command below
    const Op rotate = Rotate{clockwise};
    for (std::size_t n = 0; n < video.frames.size(); ++n) {
      const Image expected = reference::apply(rotate, upright.frames[n]);
      ASSERT_EQ(video.frames[n].size(), expected.size()) << tag << " frame " << n;
      EXPECT_EQ(difference(video.frames[n], expected).bytes, 0u) << tag << " frame " << n;
    }
    const Image ffmpegs = io::read_ppm(first);
    ASSERT_EQ(ffmpegs.size(), video.frames[0].size()) << tag;
    EXPECT_EQ(difference(video.frames[0], ffmpegs).bytes, 0u) << tag;
    EXPECT_TRUE(video.decoder.find("turned " + std::to_string(clockwise) + " degrees clockwise") != std::string::npos)
        << video.decoder;
  }
}

// Damaged bytes inside a stream, and a file cut in half: the decoder conceals what it can, the frames after the
// damage still come out, the damaged ones are named, and nothing hangs.
TEST(CpuVideo, DamagedStreamsAreReadToTheirEndWithTheDamagedFramesNamed) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  TempDir dir;
  std::mt19937 random(7);
  const auto damage = [&](const char* clip, std::size_t bytes) {
    std::vector<std::uint8_t> data = file_bytes(video_file(clip));
    for (std::size_t i = data.size() / 2; i < data.size() / 2 + bytes; ++i)
      data[i] = static_cast<std::uint8_t>(random());
    const fs::path path = dir.path() / (std::string("damaged_") + clip);
    write_bytes(path, std::string(data.begin(), data.end()));
    return path;
  };
  const DecodedVideo whole = decode(video_file("clip.mp4"));
  const DecodedVideo damaged = decode(damage("clip.mp4", 3000));
  EXPECT_FALSE(damaged.corrupt.empty());
  EXPECT_GT(damaged.frames.size(), whole.frames.size() * 3 / 4) << "the frames after the damage came out";
  for (const std::uint64_t frame : damaged.corrupt) EXPECT_LT(frame, damaged.frames.size());

  const DecodedVideo elementary = decode(damage("clip.h264", 2000));
  EXPECT_GT(elementary.frames.size(), 20u);

  const std::vector<std::uint8_t> data = file_bytes(video_file("clip.mp4"));
  const fs::path cut = dir.path() / "cut.mp4";
  write_bytes(cut, std::string(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(data.size() / 2)));
  const DecodedVideo half = decode(cut);
  EXPECT_GT(half.frames.size(), 0u);
  EXPECT_LT(half.frames.size(), whole.frames.size());

  // An elementary stream cut inside its 13th picture: that frame is named in every run. (A frame thread hands
  // a picture out before the thread that decoded it has concealed its damage, so its flags alone named it in
  // some runs only.)
  const std::vector<std::uint8_t> h264 = file_bytes(video_file("clip.h264"));
  const fs::path cut_h264 = dir.path() / "cut.h264";
  write_bytes(cut_h264, std::string(h264.begin(), h264.begin() + 11219));
  for (int run = 0; run < 10; ++run) {
    const DecodedVideo decoded = decode(cut_h264);
    EXPECT_EQ(decoded.frames.size(), 13u) << "run " << run;
    EXPECT_EQ(decoded.corrupt, std::vector<std::uint64_t>{12}) << "run " << run;
  }
}

// A Matroska file cut short ends its stream cleanly as far as the decoder can tell, and an MP4 whose index
// outlives its bytes ends with a partial sample: only the demuxer's log says so. Whole files report nothing.
TEST(CpuVideo, AContainerCutShortIsReportedAndWholeOnesAreNot) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  TempDir dir;
  for (const char* clip : {"clip_open_gop.mp4", "clip_remuxed.mp4"}) {
    EXPECT_EQ(decode(video_file(clip)).container_damage, "") << clip;
  }
  // Files whose index comes first (an MP4 made with +faststart), so that the first 60% opens.
  for (const char* clip : {"clip.mp4", "clip_vfr.mkv"}) {
    const DecodedVideo whole = decode(video_file(clip));
    EXPECT_EQ(whole.container_damage, "") << clip;
    const std::vector<std::uint8_t> data = file_bytes(video_file(clip));
    const fs::path cut = dir.path() / (std::string("cut_") + clip);
    write_bytes(cut, std::string(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(data.size() * 6 / 10)));
    const DecodedVideo decoded = decode(cut);
    EXPECT_NE(decoded.container_damage, "") << clip;
    EXPECT_GT(decoded.frames.size(), 0u) << clip;
    EXPECT_LT(decoded.frames.size(), whole.frames.size()) << clip;
  }
}

// `bytes` of memory that end where an inaccessible page begins: a read or a write past their end faults.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(std::size_t bytes) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    mapped_ = ((bytes + page - 1) / page + 1) * page;
    base_ = static_cast<std::uint8_t*>(
        ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED || ::mprotect(base_ + mapped_ - page, page, PROT_NONE) != 0) throw std::bad_alloc();
    data_ = base_ + mapped_ - page - bytes;
  }
  ~GuardedBuffer() { ::munmap(base_, mapped_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  std::uint8_t* data() { return data_; }

 private:
  std::uint8_t* base_ = nullptr;
  std::size_t mapped_ = 0;
  std::uint8_t* data_ = nullptr;
};

// libswscale's vector code overruns rows of packed RGB; frames written from, and decoded into, buffers that end
// at an inaccessible page show that nothing is read or written past them, at widths of every alignment.
TEST(CpuVideo, FramesOfAnyWidthAreReadAndWrittenWithinTheirBuffers) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  if (!io::writes_timed_video("video.mkv")) GTEST_SKIP() << "this build has no FFmpeg encoder";
  TempDir dir;
  for (const int width : {320, 330, 362, 97}) {
    const Size size{width, 60};
    fs::path path = dir.path() / std::to_string(width);
    path += ".mkv";
    const std::unique_ptr<io::FrameWriter> writer = io::open_timed_video_writer(path, size, 25, io::Existing::keep);
    GuardedBuffer written(size.rgb_bytes());
    for (int f = 0; f < 3; ++f) {
      for (std::size_t i = 0; i < size.rgb_bytes(); ++i) written.data()[i] = static_cast<std::uint8_t>(i * 7 + f * 5);
      writer->write(ConstFrameView(written.data(), size), std::nullopt);
    }
    writer->close();
    const std::unique_ptr<io::FrameReader> reader = io::open_ffmpeg_video_reader(path);
    GuardedBuffer read(size.rgb_bytes());
    int frames = 0;
    while (const std::optional<Size> next = reader->next_size()) {
      ASSERT_EQ(*next, size);
      reader->read(FrameView(read.data(), size));
      ++frames;
    }
    EXPECT_EQ(frames, 3) << width;
  }
}

// The shape an anamorphic video is shown in survives the writer and the reader, in both containers; square pixels
// say nothing.
TEST(CpuVideo, AnAnamorphicVideosShapeIsWrittenAndRead) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  if (!io::writes_timed_video("video.mkv")) GTEST_SKIP() << "this build has no FFmpeg encoder";
  TempDir dir;
  const Image frame = random_image({360, 240}, 3);
  for (const char* name : {"wide.mkv", "wide.mp4", "square.mkv"}) {
    const fs::path path = dir.path() / name;
    const std::optional<DisplayAspect> shown_as = name[0] == 'w' ? std::optional(DisplayAspect{16, 9}) : std::nullopt;
    const std::unique_ptr<io::FrameWriter> writer =
        io::open_timed_video_writer(path, frame.size(), 25, io::Existing::keep, {}, {shown_as, std::nullopt});
    writer->write(frame.view(), std::nullopt);
    writer->close();
    EXPECT_EQ(io::open_ffmpeg_video_reader(path)->display_aspect(), shown_as) << name;
  }
}

// The primaries and transfer a video declares are read from its container or its stream's headers (a matrix
// alone is none), and written into both containers: PQ and HLG for HDR, BT.709, and none where none is given.
TEST(CpuVideo, AVideosColorSpaceIsReadAndWritten) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  EXPECT_EQ(io::open_ffmpeg_video_reader(video_file("clip.hevc"))->rgb_color_space(), (io::RgbColorSpace{1, 1}));
  EXPECT_EQ(io::open_ffmpeg_video_reader(video_file("clip.mp4"))->rgb_color_space(), std::nullopt);  // a matrix only
  if (!io::writes_timed_video("video.mkv")) GTEST_SKIP() << "this build has no FFmpeg encoder";
  TempDir dir;
  const Image frame = random_image({64, 48}, 6);
  const std::optional<io::RgbColorSpace> spaces[] = {io::RgbColorSpace{9, 16}, io::RgbColorSpace{9, 18},
                                                     io::RgbColorSpace{1, 1}, std::nullopt};
  for (const char* container : {".mkv", ".mp4"}) {
    for (std::size_t i = 0; i < std::size(spaces); ++i) {
      const fs::path path = dir.path() / (std::to_string(i) + container);
      const std::unique_ptr<io::FrameWriter> writer =
          io::open_timed_video_writer(path, frame.size(), 25, io::Existing::keep, {}, {std::nullopt, spaces[i]});
      writer->write(frame.view(), std::nullopt);
      writer->close();
      EXPECT_EQ(io::open_ffmpeg_video_reader(path)->rgb_color_space(), spaces[i]) << path;
    }
  }
}

// What cannot be decoded is refused at open, naming the file and why.
TEST(CpuVideo, FilesThatAreNoVideoAreRefusedNamingTheFile) {
  SKIP_WITHOUT_FFMPEG_DECODING();
  TempDir dir;
  const auto refusal = [](const fs::path& path) {
    try {
      io::open_ffmpeg_video_reader(path);
    } catch (const io::IoError& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  };
  const fs::path text = dir.path() / "notes.mp4";
  write_bytes(text, "this is text, not a video");
  EXPECT_EQ(refusal(text).rfind(text.string() + ": cannot open as a video: ", 0), 0u) << refusal(text);

  // A WAV file of one second of silence: a container FFmpeg reads, with no video in it.
  const fs::path sound = dir.path() / "sound.wav";
  std::string wav = "RIFF....WAVEfmt ";
  const auto le = [&wav](std::uint32_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) wav += static_cast<char>((value >> (8 * i)) & 0xFF);
  };
  le(16, 4), le(1, 2), le(1, 2), le(8000, 4), le(16000, 4), le(2, 2), le(16, 2);
  wav += "data";
  le(16000, 4);
  wav += std::string(16000, '\0');
  write_bytes(sound, wav);
  EXPECT_EQ(refusal(sound), sound.string() + ": cannot open as a video: the file holds no video stream");

  try {
    io::open_ffmpeg_video_reader(video_file("clip.mp4"), 640 * 360 - 1);
    ADD_FAILURE() << "a video over the pixel limit was opened";
  } catch (const io::PixelLimitError& e) {
    EXPECT_TRUE(std::string(e.what()).find("(the frame size the video declares; no frame was decoded)") !=
                std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace imgpipe::testing
