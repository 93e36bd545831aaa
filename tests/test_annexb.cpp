// The Annex B splitter (io/annexb.hpp) on the sample streams of data/video: where it cuts, what each chunk
// carries, and that the chunks hand out the stream's bytes exactly once, in order.
#include "annexb.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>

namespace imgpipe::testing {
namespace {

namespace fs = std::filesystem;
using io::AnnexBSplitter;
using io::StreamChunk;
using io::VideoCodec;

const fs::path kVideo = fs::path(IMGPIPE_DATA_DIR) / "video";

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<StreamChunk> split(const std::string& stream, VideoCodec codec, std::uint64_t min_pictures) {
  std::istringstream in(stream);
  AnnexBSplitter splitter(in, "stream", codec, min_pictures);
  std::vector<StreamChunk> chunks;
  while (std::optional<StreamChunk> chunk = splitter.next()) chunks.push_back(std::move(*chunk));
  return chunks;
}

// The NAL unit types in `bytes`, in order, found by their start codes.
std::vector<int> nal_types(const std::uint8_t* bytes, std::size_t size, VideoCodec codec) {
  std::vector<int> types;
  for (std::size_t i = 0; i + 3 < size; ++i) {
    if (bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1) {
      types.push_back(codec == VideoCodec::h264 ? bytes[i + 3] & 0x1f : (bytes[i + 3] >> 1) & 0x3f);
      i += 2;
    }
  }
  return types;
}

std::string bodies(const std::vector<StreamChunk>& chunks) {
  std::string joined;
  for (const StreamChunk& chunk : chunks) {
    joined.append(reinterpret_cast<const char*>(chunk.bytes.data()) + chunk.header_bytes,
                  chunk.bytes.size() - chunk.header_bytes);
  }
  return joined;
}

bool is_vcl(int type, VideoCodec codec) {
  return codec == VideoCodec::h264 ? type >= 1 && type <= 5 : type >= 0 && type <= 31;
}

// Every chunk after the first starts its own bytes with an IDR access unit and carries the parameter sets.
void expect_decodable_alone(const std::vector<StreamChunk>& chunks, VideoCodec codec) {
  const std::vector<int> parameter_sets =
      codec == VideoCodec::h264 ? std::vector<int>{7, 8} : std::vector<int>{32, 33, 34};
  const std::vector<int> idr = codec == VideoCodec::h264 ? std::vector<int>{5} : std::vector<int>{19, 20};
  std::uint64_t offset = 0;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    SCOPED_TRACE("chunk " + std::to_string(c));
    const StreamChunk& chunk = chunks[c];
    EXPECT_EQ(chunk.stream_offset, offset);
    offset += chunk.bytes.size() - chunk.header_bytes;
    const std::vector<int> body =
        nal_types(chunk.bytes.data() + chunk.header_bytes, chunk.bytes.size() - chunk.header_bytes, codec);
    const auto first_slice = std::find_if(body.begin(), body.end(), [&](int t) { return is_vcl(t, codec); });
    ASSERT_NE(first_slice, body.end());
    EXPECT_NE(std::find(idr.begin(), idr.end(), *first_slice), idr.end()) << "first slice type " << *first_slice;
    if (c == 0) {
      EXPECT_EQ(chunk.header_bytes, 0u);
      continue;
    }
    const std::vector<int> header = nal_types(chunk.bytes.data(), chunk.header_bytes, codec);
    for (const int type : parameter_sets) EXPECT_NE(std::find(header.begin(), header.end(), type), header.end()) << type;
    for (const int type : header) EXPECT_NE(std::find(parameter_sets.begin(), parameter_sets.end(), type), parameter_sets.end());
  }
}

TEST(AnnexBSplitter, CutsTheH264SampleAtEachIdrPicture) {
  const std::string stream = file_bytes(kVideo / "clip.h264");
  const std::vector<StreamChunk> chunks = split(stream, VideoCodec::h264, 1);
  ASSERT_EQ(chunks.size(), 3u);  // keyframes at 0, 12 and 24 (x264 -g 12)
  EXPECT_EQ(chunks[0].pictures, 12u);
  EXPECT_EQ(chunks[1].pictures, 12u);
  EXPECT_EQ(chunks[2].pictures, 6u);
  EXPECT_EQ(bodies(chunks), stream);
  expect_decodable_alone(chunks, VideoCodec::h264);
}

TEST(AnnexBSplitter, KeepsAtLeastMinPicturesInAChunk) {
  const std::string stream = file_bytes(kVideo / "clip.h264");
  const std::vector<StreamChunk> two = split(stream, VideoCodec::h264, 13);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].pictures, 24u);
  EXPECT_EQ(two[1].pictures, 6u);
  EXPECT_EQ(bodies(two), stream);
  const std::vector<StreamChunk> one = split(stream, VideoCodec::h264, 100);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].pictures, 30u);
  EXPECT_EQ(bodies(one), stream);
}

TEST(AnnexBSplitter, LeavesAnOpenGopHevcStreamWhole) {
  // x265's default GOPs are open (CRA pictures after the first IDR): no safe cut.
  const std::string stream = file_bytes(kVideo / "clip.hevc");
  const std::vector<StreamChunk> chunks = split(stream, VideoCodec::hevc, 1);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].pictures, 30u);
  EXPECT_EQ(bodies(chunks), stream);
}

TEST(AnnexBSplitter, CutsConcatenatedHevcStreamsAtEachCopysIdr) {
  const std::string once = file_bytes(kVideo / "clip.hevc");
  const std::string stream = once + once + once;
  const std::vector<StreamChunk> chunks = split(stream, VideoCodec::hevc, 1);
  ASSERT_EQ(chunks.size(), 3u);
  for (const StreamChunk& chunk : chunks) EXPECT_EQ(chunk.pictures, 30u);
  EXPECT_EQ(bodies(chunks), stream);
  expect_decodable_alone(chunks, VideoCodec::hevc);
}

TEST(AnnexBSplitter, HandsOutAStreamLongerThanOneReadExactlyOnce) {
  // Over 1 MiB, so start codes fall across the splitter's reads.
  const std::string once = file_bytes(kVideo / "clip.h264");
  std::string stream;
  for (int copy = 0; copy < 60; ++copy) stream += once;
  ASSERT_GT(stream.size(), 1u << 20);
  const std::vector<StreamChunk> chunks = split(stream, VideoCodec::h264, 1);
  ASSERT_EQ(chunks.size(), 180u);
  std::uint64_t pictures = 0;
  for (const StreamChunk& chunk : chunks) pictures += chunk.pictures;
  EXPECT_EQ(pictures, 1800u);
  EXPECT_EQ(bodies(chunks), stream);
  expect_decodable_alone(chunks, VideoCodec::h264);
}

TEST(AnnexBSplitter, EmptyAndStartCodeFreeInputs) {
  EXPECT_TRUE(split("", VideoCodec::h264, 1).empty());
  const std::string noise = "not a video stream at all";
  const std::vector<StreamChunk> chunks = split(noise, VideoCodec::hevc, 1);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].pictures, 0u);
  EXPECT_EQ(bodies(chunks), noise);
}

TEST(AnnexBSplitter, ATruncatedStreamKeepsItsLastBytes) {
  const std::string stream = file_bytes(kVideo / "clip.h264");
  const std::string cut_short = stream.substr(0, stream.size() / 2 + 1);
  const std::vector<StreamChunk> chunks = split(cut_short, VideoCodec::h264, 1);
  EXPECT_EQ(bodies(chunks), cut_short);
  EXPECT_GE(chunks.size(), 1u);
}

TEST(AnnexBSplitter, TellsWhetherAStreamCanBeCutEarly) {
  auto early_cut = [](const std::string& stream, VideoCodec codec, std::uint64_t min_pictures, std::size_t bytes) {
    std::istringstream in(stream);
    return io::probe_split(in, codec, min_pictures, bytes).early_cut;
  };
  const std::string h264 = file_bytes(kVideo / "clip.h264");
  EXPECT_TRUE(early_cut(h264, VideoCodec::h264, 1, 1 << 20));
  EXPECT_FALSE(early_cut(h264, VideoCodec::h264, 48, 1 << 20));  // 30 pictures: too short to cut
  const std::string hevc = file_bytes(kVideo / "clip.hevc");
  EXPECT_FALSE(early_cut(hevc, VideoCodec::hevc, 1, 1 << 20));  // open GOPs
  const std::string three = hevc + hevc + hevc;
  EXPECT_TRUE(early_cut(three, VideoCodec::hevc, 1, hevc.size() + 4096));  // the second copy's IDR picture
  EXPECT_FALSE(early_cut(three, VideoCodec::hevc, 1, hevc.size() - 1));
  EXPECT_FALSE(early_cut("", VideoCodec::h264, 1, 1 << 20));
}

TEST(AnnexBSplitter, TellsWhetherAStreamStartsAtAnIdrPicture) {
  auto starts_at_idr = [](const std::string& stream, VideoCodec codec) {
    std::istringstream in(stream);
    return io::probe_split(in, codec, 1, 1 << 20).starts_at_idr;
  };
  EXPECT_TRUE(starts_at_idr(file_bytes(kVideo / "clip.h264"), VideoCodec::h264));
  EXPECT_TRUE(starts_at_idr(file_bytes(kVideo / "clip.hevc"), VideoCodec::hevc));
  EXPECT_FALSE(starts_at_idr("", VideoCodec::h264));
  // Cut at a CRA picture, the first of its open GOPs (data/make_data.sh).
  EXPECT_FALSE(starts_at_idr(file_bytes(kVideo / "clip_open_gop.hevc"), VideoCodec::hevc));
}

}  // namespace
}  // namespace imgpipe::testing
