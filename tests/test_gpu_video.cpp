// GPU video: the NV12/P016 -> RGB kernel (kernels/yuv.cuh) against a plain CPU conversion, and NVDEC decoding
// (io/gpu_video.hpp) of the H.264 and HEVC clips in data/video against FFmpeg's own RGB of the same frames.
// Everything that needs a GPU skips without one.
#include "gpu_test_support.hpp"
#include "gpu_video.hpp"
#include "ppm.hpp"
#include "sample_videos.hpp"
#include "test_io_helpers.hpp"
#include "video_demux.hpp"
#include "yuv.cuh"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

namespace imgpipe::testing {
namespace {

namespace fs = std::filesystem;

// The conversion as the standards write it (Y'CbCr of BT.601/709/2020 back to R'G'B'), in double precision,
// truncated as libswscale does; 16-bit samples hold the value in their high bits.
Image reference_rgb(const std::vector<std::uint8_t>& luma, const std::vector<std::uint8_t>& chroma, std::size_t pitch,
                    Size size, int bytes_per_sample, cuda::YuvColor color) {
  auto sample = [&](const std::vector<std::uint8_t>& plane, std::size_t row, std::size_t index) {
    const std::uint8_t* p = plane.data() + row * pitch + index * bytes_per_sample;
    return bytes_per_sample == 1 ? double(p[0]) : (p[0] | (p[1] << 8)) / 256.0;
  };
  double kr = 0.299, kb = 0.114;
  if (color.matrix == cuda::YuvMatrix::bt709) kr = 0.2126, kb = 0.0722;
  if (color.matrix == cuda::YuvMatrix::bt2020) kr = 0.2627, kb = 0.0593;
  const double kg = 1 - kr - kb;
  Image out(size);
  for (int y = 0; y < size.height; ++y) {
    for (int x = 0; x < size.width; ++x) {
      double ey = sample(luma, y, x), pb = sample(chroma, y / 2, 2 * (x / 2)) - 128,
             pr = sample(chroma, y / 2, 2 * (x / 2) + 1) - 128;
      if (!color.full_range) {
        ey = (ey - 16) * 255 / 219;
        pb *= 255.0 / 224;
        pr *= 255.0 / 224;
      }
      const double rgb[3] = {ey + 2 * (1 - kr) * pr, ey - 2 * kb * (1 - kb) / kg * pb - 2 * kr * (1 - kr) / kg * pr,
                             ey + 2 * (1 - kb) * pb};
      for (int c = 0; c < 3; ++c) {
        out.data()[3 * (static_cast<std::size_t>(y) * size.width + x) + c] =
            static_cast<std::uint8_t>(std::floor(std::clamp(rgb[c], 0.0, 255.0)));
      }
    }
  }
  return out;
}

struct Nv12Case {
  Size size;
  int bytes_per_sample;
};

TEST(Nv12ToRgb, MatchesThePlainConversionOnEverySizeMatrixAndRange) {
  SKIP_WITHOUT_DEVICE();
  const Device device;
  std::mt19937 random(7);
  for (const Nv12Case& c : {Nv12Case{{1, 1}, 1}, {{2, 2}, 1}, {{3, 7}, 1}, {{17, 9}, 1}, {{240, 136}, 1},
                            {{641, 359}, 1}, {{1, 1}, 2}, {{3, 7}, 2}, {{17, 9}, 2}, {{322, 181}, 2}}) {
    // Pitches that are not multiples of 4 (of whole samples), on both sides.
    const std::size_t pitch = static_cast<std::size_t>(c.size.width + 3) * c.bytes_per_sample;
    const std::size_t out_pitch = 3 * static_cast<std::size_t>(c.size.width) + 1;
    const std::size_t chroma_rows = (c.size.height + 1) / 2;
    std::vector<std::uint8_t> luma(pitch * c.size.height), chroma(pitch * chroma_rows);
    for (auto& b : luma) b = static_cast<std::uint8_t>(random());
    for (auto& b : chroma) b = static_cast<std::uint8_t>(random());
    cuda::DeviceBuffer d_luma(luma.size()), d_chroma(chroma.size());
    IMGPIPE_CUDA_CHECK(cudaMemcpy(d_luma.data(), luma.data(), luma.size(), cudaMemcpyHostToDevice));
    IMGPIPE_CUDA_CHECK(cudaMemcpy(d_chroma.data(), chroma.data(), chroma.size(), cudaMemcpyHostToDevice));
    for (const cuda::YuvMatrix matrix : {cuda::YuvMatrix::bt601, cuda::YuvMatrix::bt709, cuda::YuvMatrix::bt2020}) {
      for (const bool full_range : {false, true}) {
        const cuda::YuvColor color{matrix, full_range};
        const cuda::DeviceBuffer out = device.poisoned(out_pitch * c.size.height);
        const cuda::Extent extent{c.size.width, c.size.height};
        cuda::nv12_to_rgb({d_luma.data(), d_chroma.data(), pitch, extent, c.bytes_per_sample}, color,
                          {out.data(), extent, out_pitch}, device.stream());
        const Image got = device.download(out.data(), c.size, out_pitch);
        EXPECT_TRUE(within(got, reference_rgb(luma, chroma, pitch, c.size, c.bytes_per_sample, color), 1))
            << to_string(c.size) << ", " << c.bytes_per_sample << "-byte samples, matrix "
            << static_cast<int>(matrix) << (full_range ? ", full range" : ", limited range");
      }
    }
  }
}

TEST(Nv12ToRgb, RefusesMismatchedExtentsAndShortPitches) {
  SKIP_WITHOUT_DEVICE();
  std::uint8_t byte = 0;
  EXPECT_THROW(cuda::nv12_to_rgb({&byte, &byte, 4, {4, 2}, 1}, {}, {&byte, {4, 4}, 12}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(cuda::nv12_to_rgb({&byte, &byte, 3, {4, 2}, 1}, {}, {&byte, {4, 2}, 12}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(cuda::nv12_to_rgb({&byte, &byte, 8, {4, 2}, 3}, {}, {&byte, {4, 2}, 12}, nullptr),
               std::invalid_argument);
  alignas(2) std::uint8_t samples[2] = {};
  EXPECT_THROW(cuda::nv12_to_rgb({samples, samples, 9, {4, 2}, 2}, {}, {&byte, {4, 2}, 12}, nullptr),
               std::invalid_argument);
}

#define SKIP_WITHOUT_NVDEC()                                                                          \
  SKIP_WITHOUT_DEVICE();                                                                              \
  if (const std::string why = io::gpu_video_unavailable(); !why.empty()) GTEST_SKIP() << why

// Every frame of `path`, decoded on NVDEC into poisoned device frames.
std::vector<Image> decode_on_device(io::FrameReader& reader) {
  const Device device;
  std::vector<Image> frames;
  while (const std::optional<Size> size = reader.next_size()) {
    const cuda::DeviceBuffer frame = device.poisoned(size->rgb_bytes());
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(device.stream()));
    reader.read_to_device(DeviceFrame{frame.data(), *size, device.stream()});
    frames.push_back(device.download(frame.data(), *size));
  }
  return frames;
}

struct ClipCase {
  const char* file;
  const char* colour;  // as the decoder describes it
};

class NvdecClip : public ::testing::TestWithParam<ClipCase> {};

// FFmpeg decodes the same bitstream to the same YUV (H.264 and HEVC decoding is exact); what differs is the
// conversion to RGB, where libswscale's table arithmetic lands within 2 levels of the exact formula.
TEST_P(NvdecClip, EveryFrameInOrderWithinTwoLevelsOfFfmpeg) {
  SKIP_WITHOUT_NVDEC();
  const std::unique_ptr<io::FrameReader> reader = io::open_gpu_video_reader(video_file(GetParam().file));
  EXPECT_TRUE(reader->decodes_on_device());
  EXPECT_NE(reader->decoder().find(GetParam().colour), std::string::npos) << reader->decoder();
  EXPECT_EQ(reader->frame_rate().value_or(0), 25.0);
  const std::vector<Image> frames = decode_on_device(*reader);
  ASSERT_EQ(frames.size(), 30u);
  EXPECT_TRUE(reader->corrupt_frames().empty());
  for (const int n : {0, 14, 29}) {
    const Image expected = io::read_ppm(video_file("ffmpeg_rgb") / (std::string(GetParam().file) + "." +
                                                                    std::to_string(n) + ".ppm"));
    ASSERT_EQ(frames[n].size(), (Size{240, 136}));
    EXPECT_TRUE(within(frames[n], expected, 2)) << "frame " << n;
    double sum = 0;
    for (std::size_t i = 0; i < expected.bytes(); ++i) sum += std::abs(frames[n].data()[i] - expected.data()[i]);
    std::printf("%s frame %d: max difference %d, mean %.3f\n", GetParam().file, n, max_abs_diff(frames[n], expected),
                sum / expected.bytes());
  }
}

// read() converts on the device too and copies the frame down: the same bytes.
TEST_P(NvdecClip, HostFramesEqualDeviceFrames) {
  SKIP_WITHOUT_NVDEC();
  const std::unique_ptr<io::FrameReader> on_device = io::open_gpu_video_reader(video_file(GetParam().file));
  const std::vector<Image> expected = decode_on_device(*on_device);
  const std::unique_ptr<io::FrameReader> to_host = io::open_gpu_video_reader(video_file(GetParam().file));
  std::size_t n = 0;
  while (const std::optional<Size> size = to_host->next_size()) {
    Image frame(*size);
    to_host->read(FrameView{frame.data(), *size});
    ASSERT_LT(n, expected.size());
    EXPECT_EQ(max_abs_diff(frame, expected[n]), 0) << "frame " << n;
    ++n;
  }
  EXPECT_EQ(n, expected.size());
}

INSTANTIATE_TEST_SUITE_P(Clips, NvdecClip,
                         ::testing::Values(ClipCase{"clip.h264", "H.264, 8-bit 4:2:0, BT.601 limited range"},
                                           ClipCase{"clip.hevc", "HEVC, 8-bit 4:2:0, BT.709 full range"}),
                         [](const auto& info) { return std::string(info.param.file).substr(5); });

// A reader dropped halfway stops its decoder thread (the test would hang otherwise).
TEST(Nvdec, AReaderDroppedMidStreamStops) {
  SKIP_WITHOUT_NVDEC();
  const Device device;
  const std::unique_ptr<io::FrameReader> reader = io::open_gpu_video_reader(video_file("clip.h264"));
  const std::optional<Size> size = reader->next_size();
  ASSERT_TRUE(size);
  const cuda::DeviceBuffer frame(size->rgb_bytes());
  reader->read_to_device(DeviceFrame{frame.data(), *size, device.stream()});
  ASSERT_TRUE(reader->next_size());  // a surface is mapped and waiting
}

// A stream cut short gives the frames before the cut and ends; damaged bytes give frames, never a hang.
TEST(Nvdec, TruncatedAndDamagedStreamsEnd) {
  SKIP_WITHOUT_NVDEC();
  const std::vector<std::uint8_t> clip = file_bytes(video_file("clip.h264"));
  TempDir dir;
  const fs::path truncated = dir.path() / "truncated.h264";
  write_bytes(truncated, std::string(clip.begin(), clip.begin() + static_cast<std::ptrdiff_t>(clip.size() / 2)));
  std::unique_ptr<io::FrameReader> reader = io::open_gpu_video_reader(truncated);
  const std::size_t truncated_frames = decode_on_device(*reader).size();
  EXPECT_GT(truncated_frames, 0u);
  EXPECT_LT(truncated_frames, 30u);

  std::string damaged(clip.begin(), clip.end());
  std::mt19937 random(3);
  for (std::size_t i = damaged.size() / 3; i < damaged.size() / 3 + 2000; ++i) damaged[i] = static_cast<char>(random());
  write_bytes(dir.path() / "damaged.h264", damaged);
  reader = io::open_gpu_video_reader(dir.path() / "damaged.h264");
  const std::size_t damaged_frames = decode_on_device(*reader).size();
  EXPECT_GT(damaged_frames, 0u);
  std::printf("damaged stream: %zu frames out, %zu reported damaged\n", damaged_frames,
              reader->corrupt_frames().size());
}

// Every frame of `reader`, copied to the host by read().
std::vector<Image> decode_to_host(io::FrameReader& reader) {
  std::vector<Image> frames;
  while (const std::optional<Size> size = reader.next_size()) {
    frames.emplace_back(*size);
    std::fill_n(frames.back().data(), frames.back().bytes(), std::uint8_t{0xA5});
    reader.read(FrameView{frames.back().data(), *size});
  }
  return frames;
}

// `copies` of a sample clip back to back (an elementary stream concatenates), in `dir`.
fs::path repeated_clip(const TempDir& dir, const std::string& name, int copies) {
  const std::vector<std::uint8_t> once = file_bytes(video_file(name));
  std::string stream;
  for (int copy = 0; copy < copies; ++copy) stream.append(once.begin(), once.end());
  const fs::path path = dir.path() / (std::to_string(copies) + "x" + name);
  write_bytes(path, stream);
  return path;
}

io::GpuVideoSplit split_over(int decoders, std::size_t buffer_bytes = 0) {
  io::GpuVideoSplit split;
  split.decoders = decoders;
  split.min_chunk_pictures = 1;  // every IDR picture of the samples is a cut
  split.buffer_bytes = buffer_bytes;
  return split;
}

void expect_same_frames(const std::vector<Image>& frames, const std::vector<Image>& expected) {
  ASSERT_EQ(frames.size(), expected.size());
  for (std::size_t n = 0; n < frames.size(); ++n) {
    ASSERT_EQ(frames[n].size(), expected[n].size()) << "frame " << n;
    EXPECT_EQ(std::memcmp(frames[n].data(), expected[n].data(), expected[n].bytes()), 0) << "frame " << n;
  }
}

struct SplitCase {
  const char* file;
  int copies;
  int decoders;
  std::size_t buffer_bytes;  // 1: each decoder holds its minimum of 8 frames, so decoders wait on the reader
  const char* described;     // in the reader's decoder()
};

class NvdecSplit : public ::testing::TestWithParam<SplitCase> {};

// The same frames, bytes and order as one decoder gives, whether the stream is cut into chunks (clip.h264 has
// an IDR picture every 12 frames, each copy of a clip starts with one) or cannot be (clip.hevc's GOPs are open).
TEST_P(NvdecSplit, GivesOneDecodersFramesInOrder) {
  SKIP_WITHOUT_NVDEC();
  TempDir dir;
  const SplitCase& c = GetParam();
  const fs::path clip = repeated_clip(dir, c.file, c.copies);
  const std::unique_ptr<io::FrameReader> one = io::open_gpu_video_reader(clip);
  const std::vector<Image> expected = decode_on_device(*one);
  ASSERT_EQ(expected.size(), 30u * c.copies);

  const std::unique_ptr<io::FrameReader> split = io::open_gpu_video_reader(clip, split_over(c.decoders, c.buffer_bytes));
  EXPECT_TRUE(split->decodes_on_device());
  EXPECT_EQ(split->frame_rate().value_or(0), 25.0);
  expect_same_frames(decode_on_device(*split), expected);
  EXPECT_NE(split->decoder().find(c.described), std::string::npos) << split->decoder();
  EXPECT_TRUE(split->corrupt_frames().empty());

  const std::unique_ptr<io::FrameReader> to_host =
      io::open_gpu_video_reader(clip, split_over(c.decoders, c.buffer_bytes));
  expect_same_frames(decode_to_host(*to_host), expected);
}

INSTANTIATE_TEST_SUITE_P(
    Clips, NvdecSplit,
    ::testing::Values(SplitCase{"clip.h264", 1, 3, 0, "3 decoders on 3 chunks cut at IDR pictures"},
                      SplitCase{"clip.h264", 4, 3, 0, "3 decoders on 12 chunks"},
                      SplitCase{"clip.h264", 4, 5, 1, "5 decoders on 12 chunks"},
                      SplitCase{"clip.hevc", 1, 3, 0, "one decoder: no IDR picture to cut the stream at"},
                      SplitCase{"clip.hevc", 3, 2, 1, "2 decoders on 3 chunks"}),
    [](const auto& info) {
      const SplitCase& c = info.param;
      return std::string(c.file).substr(5) + "_" + std::to_string(c.copies) + "copies_" + std::to_string(c.decoders) +
             "decoders" + (c.buffer_bytes == 1 ? "_minimal_buffers" : "");
    });

// A split reader dropped halfway, its decoders waiting for buffers, stops them (the test would hang otherwise).
TEST(NvdecSplitStop, AReaderDroppedMidStreamStopsEveryDecoder) {
  SKIP_WITHOUT_NVDEC();
  const Device device;
  TempDir dir;
  const std::unique_ptr<io::FrameReader> reader =
      io::open_gpu_video_reader(repeated_clip(dir, "clip.h264", 8), split_over(4, 1));
  const std::optional<Size> size = reader->next_size();
  ASSERT_TRUE(size);
  const cuda::DeviceBuffer frame(size->rgb_bytes());
  for (int n = 0; n < 5; ++n) {
    ASSERT_TRUE(reader->next_size());
    reader->read_to_device(DeviceFrame{frame.data(), *size, device.stream()});
  }
}

// A cut-short and a damaged stream split over decoders end as they do on one: frames out, no hang, the damaged
// frames reported.
TEST(NvdecSplitStop, TruncatedAndDamagedStreamsEnd) {
  SKIP_WITHOUT_NVDEC();
  TempDir dir;
  const std::vector<std::uint8_t> four = file_bytes(repeated_clip(dir, "clip.h264", 4));
  const fs::path truncated = dir.path() / "truncated.h264";
  write_bytes(truncated, std::string(four.begin(), four.begin() + static_cast<std::ptrdiff_t>(four.size() * 5 / 8)));
  std::unique_ptr<io::FrameReader> one = io::open_gpu_video_reader(truncated);
  std::unique_ptr<io::FrameReader> split = io::open_gpu_video_reader(truncated, split_over(3));
  const std::vector<Image> truncated_frames = decode_on_device(*one);
  EXPECT_GT(truncated_frames.size(), 60u);
  EXPECT_LT(truncated_frames.size(), 120u);
  expect_same_frames(decode_on_device(*split), truncated_frames);

  std::string damaged(four.begin(), four.end());
  std::mt19937 random(3);
  for (std::size_t i = damaged.size() / 3; i < damaged.size() / 3 + 2000; ++i) damaged[i] = static_cast<char>(random());
  write_bytes(dir.path() / "damaged.h264", damaged);
  one = io::open_gpu_video_reader(dir.path() / "damaged.h264");
  split = io::open_gpu_video_reader(dir.path() / "damaged.h264", split_over(3));
  const std::vector<Image> damaged_frames = decode_on_device(*one);
  EXPECT_GT(damaged_frames.size(), 0u);
  EXPECT_EQ(decode_on_device(*split).size(), damaged_frames.size());
  EXPECT_EQ(split->corrupt_frames(), one->corrupt_frames());
  std::printf("damaged stream split over 3: %zu frames, %zu reported damaged\n", damaged_frames.size(),
              split->corrupt_frames().size());
}

TEST(Nvdec, AFileWithoutASequenceHeaderIsAnErrorNamingIt) {
  SKIP_WITHOUT_NVDEC();
  TempDir dir;
  const fs::path noise = dir.path() / "noise.h264";
  write_bytes(noise, std::string(4096, 'x'));
  try {
    io::open_gpu_video_reader(noise);
    FAIL() << "noise opened as H.264";
  } catch (const io::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("noise.h264"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no H.264 sequence header"), std::string::npos) << e.what();
  }
}

#define SKIP_WITHOUT_CONTAINERS_ON_NVDEC()                                                             \
  SKIP_WITHOUT_NVDEC();                                                                                \
  if (const std::string why = io::container_demuxing_unavailable(); !why.empty()) GTEST_SKIP() << why

// The frames and, where given, the times of a reader's stream.
struct TimedFrames {
  std::vector<Image> frames;
  std::vector<std::optional<double>> times;
};

TimedFrames decode_timed(io::FrameReader& reader) {
  const Device device;
  TimedFrames out;
  while (const std::optional<Size> size = reader.next_size()) {
    out.times.push_back(reader.frame_time());
    const cuda::DeviceBuffer frame = device.poisoned(size->rgb_bytes());
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(device.stream()));
    reader.read_to_device(DeviceFrame{frame.data(), *size, device.stream()});
    out.frames.push_back(device.download(frame.data(), *size));
  }
  return out;
}

// clip_remuxed.mp4 holds clip.h264's very bitstream; its edit list hides the pictures of its first two packets
// (the IDR picture, frame 0, and the P picture shown fourth, frame 3). FFmpeg's decoder shows the other 28
// (`ffmpeg -i clip_remuxed.mp4 -f framemd5 -`, matched against clip.h264's frames), and so must NVDEC.
TEST(NvdecContainer, RemuxedMp4ShowsWhatFfmpegShows) {
  SKIP_WITHOUT_CONTAINERS_ON_NVDEC();
  const std::unique_ptr<io::FrameReader> elementary = io::open_gpu_video_reader(video_file("clip.h264"));
  const std::vector<Image> all = decode_on_device(*elementary);
  ASSERT_EQ(all.size(), 30u);
  const std::unique_ptr<io::FrameReader> reader = io::open_gpu_video_reader(video_file("clip_remuxed.mp4"));
  EXPECT_TRUE(reader->decodes_on_device());
  EXPECT_NE(reader->decoder().find("H.264, 8-bit 4:2:0, BT.601 limited range"), std::string::npos)
      << reader->decoder();
  EXPECT_NE(reader->decoder().find("demuxed from QuickTime"), std::string::npos) << reader->decoder();
  EXPECT_EQ(reader->frame_rate().value_or(0), 25.0);
  const TimedFrames shown = decode_timed(*reader);
  std::vector<Image> expected;
  for (std::size_t n = 0; n < all.size(); ++n) {
    if (n != 0 && n != 3) expected.push_back(all[n]);
  }
  expect_same_frames(shown.frames, expected);
  // Each frame keeps its packet's time, as FFmpeg's decoder gives it: the raw stream had none, so the muxer
  // gave each packet its decoding time, n/25 s for packet n + 2, and the pictures shown are out of that order.
  // (`ffprobe -show_entries frame=pts`, in fiftieths of a second.)
  const std::vector<double> ffmpeg_times = {0,  2,  6,  8,  4,  12, 10, 16, 14, 18, 20, 24, 26, 22,
                                            28, 32, 34, 30, 38, 40, 36, 42, 44, 48, 50, 46, 54, 52};
  ASSERT_EQ(shown.times.size(), ffmpeg_times.size());
  for (std::size_t n = 0; n < shown.times.size(); ++n) {
    ASSERT_TRUE(shown.times[n].has_value()) << "frame " << n;
    EXPECT_NEAR(*shown.times[n], ffmpeg_times[n] / 50, 1e-9) << "frame " << n;
  }
}

// clip_open_gop.mp4 starts at a CRA picture (data/make_data.sh): the parser skips the 3 leading pictures no
// decoder can show, as FFmpeg's decoder does, and the muxer's edit list hides the CRA picture itself. FFmpeg shows
// the other 17, the frames of the elementary stream but its first, each with its own packet's time: the pictures
// after a skipped packet are not paired with it.
TEST(NvdecContainer, AStreamThatStartsInAnOpenGopShowsWhatFfmpegShows) {
  SKIP_WITHOUT_CONTAINERS_ON_NVDEC();
  const std::unique_ptr<io::FrameReader> elementary = io::open_gpu_video_reader(video_file("clip_open_gop.hevc"));
  const std::vector<Image> all = decode_on_device(*elementary);
  ASSERT_EQ(all.size(), 18u);  // of 21 pictures
  io::GpuVideoSplit split;
  split.decoders = 3;
  split.min_chunk_pictures = 1;
  const std::unique_ptr<io::FrameReader> reader = io::open_gpu_video_reader(video_file("clip_open_gop.mp4"), split);
  EXPECT_NE(reader->decoder().find("one decoder"), std::string::npos) << reader->decoder();
  const TimedFrames shown = decode_timed(*reader);
  expect_same_frames(shown.frames, std::vector<Image>(all.begin() + 1, all.end()));
  // `ffprobe -show_entries frame=pts`, in 25ths of a second.
  const std::vector<double> ffmpeg_times = {4, 3, 5, 2, 8, 7, 9, 6, 12, 11, 13, 10, 16, 15, 17, 14, 18};
  ASSERT_EQ(shown.times.size(), ffmpeg_times.size());
  for (std::size_t n = 0; n < shown.times.size(); ++n) {
    ASSERT_TRUE(shown.times[n].has_value()) << "frame " << n;
    EXPECT_NEAR(*shown.times[n], ffmpeg_times[n] / 25, 1e-9) << "frame " << n;
  }
}

// clip_vfr.mkv: HEVC with B-frames at 25, then 12.5, then 50 frames/s (data/make_data.sh). Each frame comes
// with the time it was made with, and the frames are those of the same bitstream read as an elementary stream.
TEST(NvdecContainer, VariableRateMatroskaKeepsEachFramesTime) {
  SKIP_WITHOUT_CONTAINERS_ON_NVDEC();
  TempDir dir;
  const fs::path annexb = dir.path() / "clip_vfr.hevc";
  {
    const std::unique_ptr<io::Bitstream> demuxed = io::open_container(video_file("clip_vfr.mkv"));
    std::string bytes;
    while (const std::optional<io::BitstreamPiece> piece = demuxed->next()) {
      bytes.append(piece->bytes.begin(), piece->bytes.end());
    }
    write_bytes(annexb, bytes);
  }
  const std::unique_ptr<io::FrameReader> elementary = io::open_gpu_video_reader(annexb);
  const std::vector<Image> expected = decode_on_device(*elementary);
  const std::unique_ptr<io::FrameReader> reader = io::open_gpu_video_reader(video_file("clip_vfr.mkv"));
  EXPECT_NE(reader->decoder().find("HEVC, 8-bit 4:2:0, BT.709 full range"), std::string::npos) << reader->decoder();
  EXPECT_NE(reader->decoder().find("demuxed from Matroska"), std::string::npos) << reader->decoder();
  const TimedFrames shown = decode_timed(*reader);
  expect_same_frames(shown.frames, expected);
  ASSERT_EQ(shown.times.size(), 30u);
  for (int n = 0; n < 30; ++n) {
    const double made_at = clip_vfr_made_at(n);
    ASSERT_TRUE(shown.times[n].has_value()) << "frame " << n;
    EXPECT_NEAR(*shown.times[n], made_at, 1e-9) << "frame " << n;
  }
}

// A container cut at its IDR pictures over several decoders: the frames and times of one decoder.
TEST(NvdecContainer, SplitOverDecodersGivesOneDecodersFramesAndTimes) {
  SKIP_WITHOUT_CONTAINERS_ON_NVDEC();
  const std::unique_ptr<io::FrameReader> one = io::open_gpu_video_reader(video_file("clip_remuxed.mp4"));
  const TimedFrames expected = decode_timed(*one);
  ASSERT_EQ(expected.frames.size(), 28u);
  io::GpuVideoSplit split;
  split.decoders = 3;
  split.min_chunk_pictures = 1;
  const std::unique_ptr<io::FrameReader> reader = io::open_gpu_video_reader(video_file("clip_remuxed.mp4"), split);
  EXPECT_NE(reader->decoder().find("demuxed from QuickTime / MOV, 3 decoders on"), std::string::npos)
      << reader->decoder();
  const TimedFrames shown = decode_timed(*reader);
  expect_same_frames(shown.frames, expected.frames);
  EXPECT_EQ(shown.times, expected.times);
  EXPECT_NE(reader->decoder().find("3 chunks cut at IDR pictures"), std::string::npos) << reader->decoder();
}

// A container whose video NVDEC's path does not take is refused, for the CPU decoder to try.
TEST(NvdecContainer, VideoThatIsNotH264OrHevcIsRefused) {
  SKIP_WITHOUT_CONTAINERS_ON_NVDEC();
  try {
    io::open_gpu_video_reader(fs::path(IMGPIPE_DATA_DIR) / "images" / "astronaut.jpg");
    FAIL() << "a JPEG opened on NVDEC";
  } catch (const io::GpuVideoRefusal& e) {
    EXPECT_NE(std::string(e.what()).find("mjpeg"), std::string::npos) << e.what();
  }
}

// What NVDEC is not asked to read is refused before any device work, so these run everywhere.
TEST(GpuVideoRefusal, ContainersWithoutLibavformatAndMissingFilesAreRefusedOrReported) {
  if (!io::container_demuxing_unavailable().empty()) {
    try {
      io::open_gpu_video_reader(video_file("clip.mp4"));
      FAIL() << "an MP4 opened on NVDEC without libavformat";
    } catch (const io::GpuVideoRefusal& e) {
      const std::string why = e.what();
      EXPECT_TRUE(why.find("elementary streams") != std::string::npos || why.find("no NVDEC") != std::string::npos)
          << why;
    }
  }
  EXPECT_TRUE(io::elementary_stream_codec("a/b.H264") == io::VideoCodec::h264);
  EXPECT_TRUE(io::elementary_stream_codec("x.265") == io::VideoCodec::hevc);
  EXPECT_FALSE(io::elementary_stream_codec("x.mp4"));
  if (io::gpu_video_unavailable().empty()) {
    EXPECT_THROW(io::open_gpu_video_reader("/nonexistent/clip.h264"), io::IoError);
  } else {
    EXPECT_THROW(io::open_gpu_video_reader("/nonexistent/clip.h264"), io::GpuVideoRefusal);
  }
}

// A FIFO, a pipe or a URL is left to the CPU decoder, which can stop while a live feed stalls: NVDEC's path would
// read it twice (to find where to split it) and block where no stop reaches.
TEST(GpuVideoRefusal, FifosAndUrlsAreLeftToTheCpuDecoder) {
  TempDir dir;
  const fs::path fifo = dir.path() / "feed.h264";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const bool nvdec_built_in = io::gpu_video_unavailable().find("this build has no NVDEC") == std::string::npos;
  for (const auto& [input, reason] : {std::pair<fs::path, std::string>{fifo, "not a regular file"},
                                      {"file:" + fifo.string(), "a URL"},
                                      {"rtsp://127.0.0.1:1/live", "a URL"}}) {
    try {
      io::open_gpu_video_reader(input);  // would wait for the FIFO's writer
      FAIL() << input << " opened on NVDEC";
    } catch (const io::GpuVideoRefusal& e) {
      if (nvdec_built_in) {
        EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace imgpipe::testing
