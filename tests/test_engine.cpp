// N frames through an engine equal N frames through the single-frame path, in order, whatever the number of
// frames against the number of slots, the backend, the memory mode, a stalling writer or mixed frame sizes.
#include "backends.hpp"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
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
  void write(ConstFrameView frame, std::optional<double>) override {
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

TEST(Engine, AFrameCanBeTakenBackBeforeTheFramesSubmittedEarlier) {
  auto engine = make_backend_engine(std::make_unique<InvertBackend>(), parse_chain("gray"), 3);
  std::vector<FrameSlot*> slots;
  for (int i = 0; i < 3; ++i) {
    slots.push_back(&engine->acquire({2, 1}));
    std::memset(slots.back()->input.data, 10 * i, slots.back()->input.size.rgb_bytes());
    engine->submit(*slots.back());
  }
  engine->wait_until_done(*slots[1]);
  EXPECT_EQ(slots[1]->output.data[0], 255 - 10);
  EXPECT_EQ(engine->in_flight(), 2);
  EXPECT_THROW(engine->wait_until_done(*slots[1]), std::logic_error) << "a frame was taken back twice";
  EXPECT_EQ(engine->next_completed(), slots[0]) << "the frames left did not keep their submit order";
  EXPECT_EQ(engine->next_completed(), slots[2]);
  EXPECT_EQ(engine->next_completed(), nullptr);
  for (FrameSlot* slot : slots) engine->release(*slot);
}

TEST(Engine, RejectsSlotCountsOutOfRange) {
  EXPECT_THROW(make_backend_engine(std::make_unique<InvertBackend>(), parse_chain("gray"), 0), std::invalid_argument);
  EXPECT_THROW(make_backend_engine(std::make_unique<InvertBackend>(), parse_chain("gray"), kMaxSlots + 1),
               std::invalid_argument);
}

// Every engine kind this machine can run, against a fresh backend of the same kind frame by frame.
// `device_groups` above 1: the GPU ring spread over that many device groups, all on the current device (the
// same code as over as many GPUs: each group its own slots, streams and plans, frames dealt to the least busy).
struct EngineCase {
  BackendKind kind;
  MemoryMode memory;
  bool prefetch;
  int slots;
  int device_groups = 1;
};

void PrintTo(const EngineCase& c, std::ostream* os) {
  *os << to_string(c.kind) << ", " << to_string(c.memory) << (c.prefetch ? " with prefetch" : "") << ", " << c.slots
      << " slots";
  if (c.device_groups > 1) *os << " over " << c.device_groups << " device groups";
}

std::string case_name(const ::testing::TestParamInfo<EngineCase>& info) {
  const EngineCase& c = info.param;
  std::string name = std::string(to_string(c.kind)) + "_" + std::string(to_string(c.memory));
  if (c.memory == MemoryMode::managed) name += c.prefetch ? "_prefetch" : "_noprefetch";
  name += "_" + std::to_string(c.slots) + "slots";
  if (c.device_groups > 1) name += "_" + std::to_string(c.device_groups) + "groups";
  return name;
}

int current_device() {
  int device = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  return device;
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
    EngineOptions options{c.slots, c.memory, c.prefetch, Arithmetic::fast, {}};
    if (c.device_groups > 1) options.devices.assign(static_cast<std::size_t>(c.device_groups), current_device());
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
                      EngineCase{BackendKind::optimized, MemoryMode::managed, false, 3},
                      EngineCase{BackendKind::optimized, MemoryMode::pinned, false, 4, 2},
                      EngineCase{BackendKind::optimized, MemoryMode::pageable, false, 5, 3},
                      EngineCase{BackendKind::optimized, MemoryMode::managed, true, 4, 2}),
    case_name);

class SkipWithoutDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::device_available()) GTEST_SKIP() << "needs a CUDA device; none is usable here";
  }
};

class DeviceGroups : public SkipWithoutDevice {};

// Slots are dealt to the device with the least work queued: frames taken one after another, none started yet,
// alternate between the groups; once group 0's frames are done, the next frames go to group 0 again.
TEST_F(DeviceGroups, FramesGoToTheDeviceWithTheLeastWorkQueued) {
  const int device = current_device();
  auto engine = make_gpu_engine(GpuPath::optimized, parse_chain("gray"),
                                EngineOptions{6, MemoryMode::pinned, false, Arithmetic::fast, {device, device}});
  std::vector<FrameSlot*> taken;
  int per_group[2] = {0, 0};
  for (int i = 0; i < 4; ++i) {
    taken.push_back(&engine->acquire({8, 8}));
    ++per_group[taken.back()->index % 2];  // slot i belongs to group i % 2
    EXPECT_EQ(taken.back()->device, device);
  }
  EXPECT_EQ(per_group[0], 2);
  EXPECT_EQ(per_group[1], 2);
  // Group 1's two frames stay taken and unsubmitted (queued work); group 0's are done and given back.
  for (FrameSlot* slot : taken) {
    if (slot->index % 2 == 0) {
      engine->submit(*slot);
      ASSERT_EQ(engine->next_completed(), slot);
      engine->release(*slot);
    }
  }
  for (int i = 0; i < 2; ++i) EXPECT_EQ(engine->acquire({8, 8}).index % 2, 0) << "frame " << i;
}

TEST_F(DeviceGroups, DescribesTheDevicesAndRefusesFewerSlotsThanDevices) {
  const int device = current_device();
  auto engine = make_gpu_engine(GpuPath::optimized, parse_chain("gray"),
                                EngineOptions{2, MemoryMode::pinned, false, Arithmetic::fast, {device, device}});
  EXPECT_NE(engine->describe().find("over devices " + std::to_string(device) + "," + std::to_string(device)),
            std::string::npos)
      << engine->describe();
  EXPECT_THROW(make_gpu_engine(GpuPath::optimized, parse_chain("gray"),
                               EngineOptions{1, MemoryMode::pinned, false, Arithmetic::fast, {device, device}}),
               std::invalid_argument);
  int count = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDeviceCount(&count));
  try {
    make_gpu_engine(GpuPath::optimized, parse_chain("gray"),
                    EngineOptions{2, MemoryMode::pinned, false, Arithmetic::fast, {count}});
    ADD_FAILURE() << "an engine on device " << count << " of " << count << " was made";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA device " + std::to_string(count) + " does not exist"), std::string::npos)
        << e.what();
  }
}

// Every device of this machine at once, against one frame at a time on the first: the same bytes, in order.
TEST_F(DeviceGroups, EveryDeviceOfThisMachineGivesTheSameFramesInOrder) {
  const std::vector<int> devices = parse_devices("all");
  if (devices.size() < 2) {
    GTEST_SKIP() << "needs two or more CUDA devices; this machine has " << devices.size()
                 << " (DeviceGroups' other tests run the same code over groups on one device)";
  }
  const Chain chain = parse_chain("resize=160x90,gaussian=5:1.0");
  const std::vector<Image> frames = distinct_frames(7 * static_cast<int>(devices.size()), {320, 181});
  auto engine = make_gpu_engine(GpuPath::optimized, chain,
                                EngineOptions{3 * static_cast<int>(devices.size()), MemoryMode::pinned, false,
                                              Arithmetic::fast, devices});
  VectorReader reader(frames);
  VectorWriter writer;
  run_frames(*engine, reader, writer);
  ASSERT_EQ(writer.frames.size(), frames.size());
  auto single = make_backend(BackendKind::optimized);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(max_abs_diff(writer.frames[i], apply(*single, chain, frames[i])), 0) << "frame " << i;
  }
}

// Pinned memory from a pool on the host NUMA node nearest the device (what PinnedBuffer holds on a host of
// several nodes): copies read and write it both ways, on a non-blocking stream, and it goes back to its pool.
TEST_F(DeviceGroups, PinnedBuffersOnTheNearestNumaNodeCopyBothWays) {
  const int node = cuda::nearest_host_numa_node();
  if (node < 0) GTEST_SKIP() << "the driver names no host NUMA node for this device, or cannot allocate on one";
  constexpr std::size_t kBytes = (std::size_t{1} << 20) + 13;
  cuda::PinnedBuffer up(kBytes), down(kBytes);
  void* on_node = cuda::allocate_pinned_on_node(kBytes, node);
  for (std::size_t i = 0; i < kBytes; ++i) up.data()[i] = static_cast<std::uint8_t>(i * 7 + 3);
  std::memset(down.data(), 0, kBytes);
  const cuda::DeviceBuffer device(kBytes);
  const cuda::Stream stream = cuda::Stream::create();
  IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(device.data(), up.data(), kBytes, cudaMemcpyHostToDevice, stream.get()));
  IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(on_node, device.data(), kBytes, cudaMemcpyDeviceToHost, stream.get()));
  IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(down.data(), on_node, kBytes, cudaMemcpyHostToHost, stream.get()));
  stream.synchronize();
  EXPECT_EQ(std::memcmp(up.data(), down.data(), kBytes), 0);
  cuda::PinnedMemory::release(on_node);
}

// --devices: "all", or device numbers, each visible and named once; the errors say what is wrong.
TEST(DeviceList, AllOrVisibleDeviceNumbersOnce) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
  EXPECT_EQ(parse_devices("all").size(), static_cast<std::size_t>(count));
  const auto message_of = [](const char* text) {
    try {
      parse_devices(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message_of("0,x").find("expected 'all' or device numbers"), std::string::npos) << message_of("0,x");
  EXPECT_NE(message_of("").find("expected 'all'"), std::string::npos) << message_of("");
  EXPECT_NE(message_of("1,").find("expected 'all'"), std::string::npos) << message_of("1,");
  EXPECT_NE(message_of("-1").find("there is no device"), std::string::npos) << message_of("-1");
  const std::string beyond = std::to_string(count);
  EXPECT_NE(message_of(beyond.c_str()).find("there is no device " + beyond), std::string::npos)
      << message_of(beyond.c_str());
  EXPECT_NE(message_of("0,0").find("device 0 is named twice"), std::string::npos) << message_of("0,0");
  if (count == 0) {
    EXPECT_NE(message_of("0").find("no CUDA device is usable here"), std::string::npos) << message_of("0");
    return;
  }
  EXPECT_EQ(parse_devices("0"), std::vector<int>{0});
}

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
