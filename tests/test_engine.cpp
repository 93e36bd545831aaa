// N frames through an engine equal N frames through the single-frame path, in order, whatever the number of
// frames against the number of slots, the backend, the memory mode, a stalling writer or mixed frame sizes.
#include "backends.hpp"
#include "cuda_check.hpp"
#include "engine.hpp"
#include "frame_stream.hpp"
#include "io_error.hpp"
#include "test_frame_reader.hpp"
#include "test_images.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace imgpipe {
namespace {

using testing::max_abs_diff;
using testing::synthetic_image;

using testing::InvertBackend;
using testing::run_frames;
using testing::VectorReader;

class VectorWriter final : public io::FrameWriter {
 public:
  explicit VectorWriter(std::chrono::milliseconds stall = {}, const VectorReader* reader = nullptr)
      : stall_(stall), reader_(reader) {}
  void write(ConstFrameView frame) override {
    if (reader_) max_ahead_ = std::max(max_ahead_, reader_->read_count() - frames.size());
    std::this_thread::sleep_for(stall_);
    frames.emplace_back(frame.size, std::vector<std::uint8_t>(frame.data, frame.data + frame.size.rgb_bytes()));
  }
  std::vector<Image> frames;
  std::size_t max_ahead_ = 0;  // frames read but not yet written, at most

 private:
  std::chrono::milliseconds stall_;
  const VectorReader* reader_;
};


std::vector<Image> distinct_frames(int count, Size size) {
  std::vector<Image> frames;
  for (int i = 0; i < count; ++i) frames.push_back(synthetic_image(size, 1000 + i));
  return frames;
}

TEST(Engine, KeepsOrderForAnyFrameCount) {
  const Chain chain = parse_chain("flip=h");  // the invert backend ignores it; sizes stay
  for (int count : {0, 1, 2, 3, 4, 17}) {
    auto engine = make_backend_engine(std::make_unique<InvertBackend>(), chain, 3);
    const auto frames = distinct_frames(count, {21, 13});
    VectorReader reader(frames);
    VectorWriter writer;
    EXPECT_EQ(run_frames(*engine, reader, writer), static_cast<std::uint64_t>(count));
    ASSERT_EQ(writer.frames.size(), frames.size());
    InvertBackend single;
    for (int i = 0; i < count; ++i) {
      Image expected(frames[i].size());
      single.process(frames[i].view(), expected.view());
      EXPECT_EQ(max_abs_diff(writer.frames[i], expected), 0) << "frame " << i << " of " << count;
    }
  }
}

// A reader that fails at frame `bad` (a short frame, a size change) after `bad` good ones.
class FailingReader final : public io::FrameReader {
 public:
  FailingReader(const std::vector<Image>& frames, std::size_t bad) : inner_(frames), bad_(bad) {}
  std::optional<Size> next_size() override { return inner_.next_size(); }
  void read(FrameView frame) override {
    if (inner_.read_count() == bad_) throw std::runtime_error("frame " + std::to_string(bad_) + " is short");
    inner_.read(frame);
  }

 private:
  VectorReader inner_;
  std::size_t bad_;
};

TEST(Engine, ABadFrameStillLetsTheFramesBeforeItOut) {
  auto engine = make_backend_engine(std::make_unique<InvertBackend>(), parse_chain("gray"), 4);
  const auto frames = distinct_frames(6, {9, 5});
  FailingReader reader(frames, 3);
  VectorWriter writer;
  EXPECT_THROW(run_frames(*engine, reader, writer), std::runtime_error);
  EXPECT_EQ(writer.frames.size(), 3u);
  EXPECT_EQ(engine->in_flight(), 0);
}

TEST(Engine, AcquireBlocksUntilAReleaseFreesASlot) {
  auto engine = make_backend_engine(std::make_unique<InvertBackend>(), parse_chain("gray"), 1);
  FrameSlot& first = engine->acquire({4, 4});
  std::atomic<bool> got_second = false;
  std::thread other([&] {
    FrameSlot& second = engine->acquire({4, 4});
    got_second = true;
    engine->release(second);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got_second) << "a second frame got a slot while the only one was in use";
  engine->release(first);
  other.join();
  EXPECT_TRUE(got_second);
}

TEST(Engine, RejectsSlotCountsOutOfRange) {
  EXPECT_THROW(make_backend_engine(std::make_unique<InvertBackend>(), parse_chain("gray"), 0), std::invalid_argument);
  EXPECT_THROW(make_backend_engine(std::make_unique<InvertBackend>(), parse_chain("gray"), kMaxSlots + 1),
               std::invalid_argument);
}

// Every engine kind this machine can run, against a fresh backend of the same kind frame by frame.
struct EngineCase {
  BackendKind kind;
  MemoryMode memory;
  bool prefetch;
  int slots;
};

void PrintTo(const EngineCase& c, std::ostream* os) {
  *os << to_string(c.kind) << ", " << to_string(c.memory) << (c.prefetch ? " with prefetch" : "") << ", " << c.slots
      << " slots";
}

std::string case_name(const ::testing::TestParamInfo<EngineCase>& info) {
  const EngineCase& c = info.param;
  std::string name = std::string(to_string(c.kind)) + "_" + std::string(to_string(c.memory));
  if (c.memory == MemoryMode::managed) name += c.prefetch ? "_prefetch" : "_noprefetch";
  return name + "_" + std::to_string(c.slots) + "slots";
}

class EngineEquivalence : public ::testing::TestWithParam<EngineCase> {
 protected:
  void SetUp() override {
    const auto kinds = available_backends();
    const auto it = std::find_if(kinds.begin(), kinds.end(), [&](const BackendInfo& b) { return b.kind == GetParam().kind; });
    if (it == kinds.end() || !it->usable) {
      GTEST_SKIP() << "backend " << to_string(GetParam().kind) << " is not usable here"
                   << (it == kinds.end() ? "" : ": " + it->detail);
    }
  }

  std::unique_ptr<Engine> make(const Chain& chain) const {
    const EngineCase& c = GetParam();
    const EngineOptions options{c.slots, c.memory, c.prefetch};
    if (c.kind == BackendKind::naive && c.memory != MemoryMode::pageable) {
      return make_gpu_engine(GpuPath::naive, chain, options);  // the naive kernels in the ring, for ablation
    }
    return make_engine(c.kind, chain, options);
  }

  void expect_same_as_single_frames(const Chain& chain, const std::vector<Image>& frames,
                                    std::chrono::milliseconds stall = {}) {
    auto engine = make(chain);
    VectorReader reader(frames);
    VectorWriter writer(stall, &reader);
    run_frames(*engine, reader, writer);
    ASSERT_EQ(writer.frames.size(), frames.size()) << engine->describe();
    EXPECT_LE(writer.max_ahead_, static_cast<std::size_t>(GetParam().slots)) << "memory was not bounded";
    auto single = make_backend(GetParam().kind);
    single->set_chain(chain);
    for (std::size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(max_abs_diff(writer.frames[i], apply(*single, chain, frames[i])), 0)
          << engine->describe() << ", frame " << i << " of " << frames.size();
    }
  }
};

TEST_P(EngineEquivalence, FrameCountsAroundTheSlotCount) {
  const Chain chain = parse_chain("resize=160x90,gaussian=5:1.0");
  for (int count : {1, GetParam().slots - 1, GetParam().slots, 3 * GetParam().slots + 2}) {
    if (count < 1) continue;
    SCOPED_TRACE("frames: " + std::to_string(count));
    expect_same_as_single_frames(chain, distinct_frames(count, {320, 181}));
  }
}

TEST_P(EngineEquivalence, StallingWriter) {
  expect_same_as_single_frames(parse_chain("sobel,rotate=90"), distinct_frames(9, {67, 45}),
                               std::chrono::milliseconds(15));
}

TEST_P(EngineEquivalence, MixedSizesGrowBuffers) {
  std::vector<Image> frames;
  for (Size s : {Size{64, 48}, Size{640, 361}, Size{33, 7}, Size{1024, 700}, Size{64, 48}})
    frames.push_back(synthetic_image(s, s.width));
  expect_same_as_single_frames(parse_chain("box=5,transpose,normalize"), frames);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, EngineEquivalence,
    ::testing::Values(EngineCase{BackendKind::cpu, MemoryMode::pageable, false, 3},
                      EngineCase{BackendKind::naive, MemoryMode::pageable, false, 1},
                      EngineCase{BackendKind::naive, MemoryMode::pinned, false, 3},
                      EngineCase{BackendKind::optimized, MemoryMode::pageable, false, 2},
                      EngineCase{BackendKind::optimized, MemoryMode::pinned, false, 1},
                      EngineCase{BackendKind::optimized, MemoryMode::pinned, false, 4},
                      EngineCase{BackendKind::optimized, MemoryMode::managed, true, 3},
                      EngineCase{BackendKind::optimized, MemoryMode::managed, false, 3}),
    case_name);

// Raw rgb24 streams, as ffmpeg pipes them.
class Pipe {
 public:
  Pipe() { EXPECT_EQ(::pipe(fds_), 0); }
  ~Pipe() {
    close_write();
    ::close(fds_[0]);
  }
  int read_end() const { return fds_[0]; }
  void write(const std::vector<std::uint8_t>& bytes) {
    ASSERT_EQ(::write(fds_[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void close_write() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(RawFrames, ReadsWholeFramesAndNamesAShortOne) {
  const Size size{5, 3};
  Pipe pipe;
  std::vector<std::uint8_t> bytes(size.rgb_bytes() * 2 + 7);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i);
  pipe.write(bytes);
  pipe.close_write();
  io::RawFrameReader reader(pipe.read_end(), size, "stdin");
  Image frame(size);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(reader.next_size(), size);
    reader.read(frame.view());
    EXPECT_EQ(frame.data()[0], static_cast<std::uint8_t>(i * size.rgb_bytes()));
    EXPECT_EQ(frame.data()[size.rgb_bytes() - 1], static_cast<std::uint8_t>((i + 1) * size.rgb_bytes() - 1));
  }
  ASSERT_EQ(reader.next_size(), size);
  try {
    reader.read(frame.view());
    FAIL() << "a 7-byte tail was accepted as a frame";
  } catch (const io::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("frame 2 is short: 7 of 45 bytes"), std::string::npos) << e.what();
  }
}

TEST(RawFrames, EmptyInputHasNoFrames) {
  Pipe pipe;
  pipe.close_write();
  io::RawFrameReader reader(pipe.read_end(), {4, 4}, "stdin");
  EXPECT_EQ(reader.next_size(), std::nullopt);
}

}  // namespace
}  // namespace imgpipe
