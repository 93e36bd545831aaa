// The job that runs every mode: items come back in order whatever order their reads and writes finish in,
// a slow item holds up no other where the sink takes any order, a failure stays with its item (or ends a
// stream), memory stays within the engine's slots, a stop request finishes what is in flight, and a sticky GPU
// error stops the job. Runs everywhere: the engine here is a plain CPU one.
#include "cuda_check.hpp"
#include "engine.hpp"
#include "job.hpp"
#include "test_frame_reader.hpp"
#include "test_images.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace imgpipe {
namespace {

using Status = ItemResult::Status;

using testing::InvertBackend;

std::unique_ptr<Engine> invert_engine(int slots) {
  return make_backend_engine(std::make_unique<InvertBackend>(), parse_chain("gray"), slots);
}

// Item i is a frame of size (i + 1) x 2 filled with byte i. Reads of earlier items take longer, so with
// several readers later items finish reading first. Items listed in `bad_reads` fail to read.
class TestSource final : public Source {
 public:
  TestSource(int count, bool concurrent, std::set<std::uint64_t> bad_reads = {})
      : count_(count), concurrent_(concurrent), bad_reads_(std::move(bad_reads)) {}
  std::optional<Item> next() override {
    if (next_ == static_cast<std::uint64_t>(count_)) return std::nullopt;
    ++nexts;
    Item item{next_, "item " + std::to_string(next_), {}, false, std::nullopt};
    if (refuse.count(next_)) item.refusal = "refused on purpose";
    if (skip.count(next_)) item.skip = true;
    ++next_;
    return item;
  }
  std::vector<std::string> read(const Item& item, const FrameAllocator& allocate) override {
    const int now = ++reading;
    max_reading = std::max(max_reading.load(), now);
    std::this_thread::sleep_for(std::chrono::milliseconds(concurrent_ ? 2 * (count_ - item.index % 8) : 0));
    --reading;
    if (bad_reads_.count(item.index)) throw std::runtime_error("unreadable on purpose");
    const FrameView frame = allocate({static_cast<int>(item.index) + 1, 2});
    std::memset(frame.data, static_cast<int>(item.index), frame.size.rgb_bytes());
    ++in_memory;
    max_in_memory = std::max(max_in_memory.load(), in_memory.load());
    return {"warning of " + item.name};
  }
  bool concurrent_reads() const override { return concurrent_; }

  std::set<std::uint64_t> refuse, skip;
  std::atomic<int> nexts = 0, reading = 0, max_reading = 0, in_memory = 0, max_in_memory = 0;

 private:
  int count_;
  bool concurrent_;
  std::set<std::uint64_t> bad_reads_;
  std::uint64_t next_ = 0;
};

class TestSink final : public Sink {
 public:
  TestSink(TestSource& source, bool concurrent, std::set<std::uint64_t> bad_writes = {})
      : source_(source), concurrent_(concurrent), bad_writes_(std::move(bad_writes)) {}
  void write(const Item& item, ConstFrameView frame) override {
    --source_.in_memory;
    if (bad_writes_.count(item.index)) throw std::runtime_error("unwritable on purpose");
    std::this_thread::sleep_for(std::chrono::milliseconds(concurrent_ ? (item.index % 3) : 0));
    std::lock_guard lock(mutex_);
    written[item.index] = std::vector<std::uint8_t>(frame.data, frame.data + frame.size.rgb_bytes());
    order.push_back(item.index);
  }
  bool concurrent_writes() const override { return concurrent_; }

  std::map<std::uint64_t, std::vector<std::uint8_t>> written;
  std::vector<std::uint64_t> order;

 private:
  TestSource& source_;
  bool concurrent_;
  std::set<std::uint64_t> bad_writes_;
  std::mutex mutex_;
};

std::string what(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
}

class JobModes : public ::testing::TestWithParam<bool> {};  // concurrent reads and writes, or a stream's order

TEST_P(JobModes, EveryItemComesBackInOrderWithItsOwnOutput) {
  const bool concurrent = GetParam();
  for (int slots : {1, 3, 7}) {
    SCOPED_TRACE("slots: " + std::to_string(slots));
    TestSource source(23, concurrent);
    TestSink sink(source, concurrent);
    auto engine = invert_engine(slots);
    std::vector<std::uint64_t> reported;
    JobOptions options;
    options.workers = 4;
    const JobSummary summary = run_job(source, *engine, sink, options, [&](const ItemResult& result) {
      reported.push_back(result.item.index);
      EXPECT_EQ(result.status, Status::done) << result.item.name;
      EXPECT_EQ(result.size, (Size{static_cast<int>(result.item.index) + 1, 2}));
      EXPECT_EQ(result.warnings, std::vector<std::string>{"warning of " + result.item.name});
    });
    EXPECT_EQ(summary.items, 23u);
    EXPECT_EQ(summary.done, 23u);
    EXPECT_EQ(summary.failed, 0u);
    EXPECT_FALSE(summary.stopped);
    ASSERT_EQ(reported.size(), 23u);
    for (std::uint64_t i = 0; i < 23; ++i) {
      EXPECT_EQ(reported[i], i) << "reports out of item order";
      ASSERT_EQ(sink.written[i].size(), (i + 1) * 2 * 3);
      EXPECT_EQ(sink.written[i][0], 255 - i) << "item " << i << " got another item's output";
    }
    if (!concurrent) {
      for (std::uint64_t i = 0; i < 23; ++i) EXPECT_EQ(sink.order[i], i) << "a stream was written out of order";
      EXPECT_EQ(source.max_reading, 1) << "a stream was read by two threads at once";
    }
    EXPECT_LE(source.max_in_memory, slots) << "more frames were held than the engine has slots";
    EXPECT_EQ(engine->in_flight(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(ReadsAndWrites, JobModes, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Concurrent" : "InOrder"; });

TEST(Job, ConcurrentReadsOverlapUpToTheWorkerCount) {
  TestSource source(24, true);
  TestSink sink(source, true);
  auto engine = invert_engine(8);
  JobOptions options;
  options.workers = 3;
  run_job(source, *engine, sink, options);
  EXPECT_GE(source.max_reading, 2) << "reads did not overlap";
  EXPECT_LE(source.max_reading, 3) << "more reads at once than workers";
}

// A sink that takes a known time per item, sleeping, or computing until its thread has run that long on a core
// (`spin`), so the job's stage times can be checked against it.
class SlowSink final : public Sink {
 public:
  explicit SlowSink(std::chrono::milliseconds per_item, bool spin = false) : per_item_(per_item), spin_(spin) {}
  void write(const Item&, ConstFrameView) override {
    if (!spin_) {
      std::this_thread::sleep_for(per_item_);
      return;
    }
    const auto thread_cpu = [] {
      timespec now{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
      return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
    };
    const auto until = thread_cpu() + per_item_;
    while (thread_cpu() < until) {
    }
  }

 private:
  std::chrono::milliseconds per_item_;
  bool spin_;
};

TEST(Job, TheSummarySaysWhichStageTheTimeWentTo) {
  TestSource source(8, false);  // a stream: reads take no time, items go one after another
  SlowSink sink(std::chrono::milliseconds(5));
  auto engine = invert_engine(3);
  const JobSummary summary = run_job(source, *engine, sink, JobOptions{});
  EXPECT_GE(summary.stages.write, 8 * 0.005) << "the writes' sleeps are missing from the write stage";
  EXPECT_LT(summary.stages.read, summary.stages.write / 2) << "reads that take no time were counted as long";
  EXPECT_GE(summary.stages.submit, 0.0);
  EXPECT_GE(summary.stages.complete, 0.0);
  // A stage's time includes waiting for the item's turn there, but no more items than the engine's 3 slots are
  // ever in flight, so no stage's total can exceed 3 times the job's time.
  EXPECT_LE(summary.stages.write, 3 * summary.seconds * 1.01);
  // Sleeping is waiting: of the writes' 40 ms, the threads ran on a core for far less.
  EXPECT_LT(summary.stages_on_cpu.write, summary.stages.write / 4);
  for (const auto& [on_cpu, in] : {std::pair{summary.stages_on_cpu.read, summary.stages.read},
                                   std::pair{summary.stages_on_cpu.submit, summary.stages.submit},
                                   std::pair{summary.stages_on_cpu.complete, summary.stages.complete}}) {
    EXPECT_GE(on_cpu, 0.0);
    EXPECT_LE(on_cpu, in * 1.01 + 1e-4);  // the two clocks tick apart by up to a tick
  }
}

// A stage that computes runs on a core most of its time: the part on the CPU counts the work, not only waits.
TEST(Job, TheSummarySaysWhichPartOfAStageRanOnACore) {
  TestSource source(6, false);
  SlowSink sink(std::chrono::milliseconds(5), true);
  auto engine = invert_engine(2);
  const JobSummary summary = run_job(source, *engine, sink, JobOptions{});
  EXPECT_GE(summary.stages_on_cpu.write, 6 * 0.005 * 0.99) << "computing counted as waiting";
  EXPECT_GE(summary.stages.write, summary.stages_on_cpu.write * 0.99);
}

// Reads and writes that take a few random microseconds each, so items overtake each other everywhere they may.
class JitterSource final : public Source {
 public:
  explicit JitterSource(int count) : count_(count) {}
  std::optional<Item> next() override {
    if (next_ == static_cast<std::uint64_t>(count_)) return std::nullopt;
    const std::uint64_t index = next_++;
    return Item{index, "item " + std::to_string(index), {}, false, std::nullopt};
  }
  std::vector<std::string> read(const Item& item, const FrameAllocator& allocate) override {
    std::this_thread::sleep_for(std::chrono::microseconds(item.index * 7919 % 200));
    const FrameView frame = allocate({2, 2});
    std::memset(frame.data, static_cast<int>(item.index % 251), frame.size.rgb_bytes());
    return {};
  }
  bool concurrent_reads() const override { return true; }

 private:
  int count_;
  std::uint64_t next_ = 0;
};

class JitterSink final : public Sink {
 public:
  void write(const Item& item, ConstFrameView frame) override {
    std::this_thread::sleep_for(std::chrono::microseconds(item.index * 104729 % 200));
    std::lock_guard lock(mutex_);
    first_bytes[item.index] = frame.data[0];
  }
  bool concurrent_writes() const override { return true; }

  std::map<std::uint64_t, std::uint8_t> first_bytes;

 private:
  std::mutex mutex_;
};

// Every in-order stage hands its turn to the one waiting ticket only; with many slots and threads, and tickets
// arriving in any order, no turn may be lost (a lost one hangs the job) and the order must hold.
TEST(Job, ManyThreadsOvertakingEachOtherStillComeBackInOrder) {
  for (const int slots : {2, 64, 128}) {
    SCOPED_TRACE("slots: " + std::to_string(slots));
    constexpr int kItems = 3000;
    JitterSource source(kItems);
    JitterSink sink;
    auto engine = invert_engine(slots);
    JobOptions options;
    options.workers = slots;
    std::uint64_t expected = 0;
    bool in_order = true;
    const JobSummary summary = run_job(source, *engine, sink, options, [&](const ItemResult& result) {
      in_order = in_order && result.item.index == expected++;
    });
    EXPECT_TRUE(in_order) << "reports out of item order";
    EXPECT_EQ(summary.done, static_cast<std::uint64_t>(kItems));
    ASSERT_EQ(sink.first_bytes.size(), static_cast<std::size_t>(kItems));
    for (const auto& [index, byte] : sink.first_bytes) {
      ASSERT_EQ(byte, 255 - index % 251) << "item " << index << " got another item's output";
    }
  }
}

TEST(Job, AFailureStaysWithItsItemAndTheJobGoesOn) {
  TestSource source(9, true, {2});
  source.refuse = {5};
  source.skip = {7};
  TestSink sink(source, true, {4});
  auto engine = invert_engine(3);
  std::map<std::uint64_t, ItemResult> results;
  const JobSummary summary =
      run_job(source, *engine, sink, {}, [&](const ItemResult& result) { results[result.item.index] = result; });
  EXPECT_EQ(summary.items, 9u);
  EXPECT_EQ(summary.done, 5u);
  EXPECT_EQ(summary.skipped, 1u);
  EXPECT_EQ(summary.failed, 3u);
  EXPECT_EQ(results[2].status, Status::failed);
  EXPECT_EQ(results[2].stage, Stage::read);
  EXPECT_EQ(what(results[2].error), "unreadable on purpose");
  EXPECT_EQ(results[4].status, Status::failed);
  EXPECT_EQ(results[4].stage, Stage::write);
  EXPECT_EQ(what(results[4].error), "unwritable on purpose");
  EXPECT_EQ(results[5].status, Status::refused);
  EXPECT_EQ(results[7].status, Status::skipped);
  ASSERT_TRUE(summary.first_failure.has_value());
  EXPECT_EQ(summary.first_failure->item.index, 2u);
  for (std::uint64_t i : {0, 1, 3, 6, 8}) EXPECT_TRUE(sink.written.count(i)) << i;
  for (std::uint64_t i : {2, 4, 5, 7}) EXPECT_FALSE(sink.written.count(i)) << i;
  // Every slot came back: the engine lends all of them again without waiting.
  std::vector<FrameSlot*> slots;
  for (int i = 0; i < engine->slots(); ++i) slots.push_back(&engine->acquire({1, 1}));
  for (FrameSlot* slot : slots) engine->release(*slot);
}

TEST(Job, AStreamEndsAtItsFirstBadItemAfterWritingTheOnesBefore) {
  TestSource source(10, false, {4});
  TestSink sink(source, false);
  auto engine = invert_engine(3);
  JobOptions options;
  options.stop_at_first_failure = true;
  const JobSummary summary = run_job(source, *engine, sink, options);
  EXPECT_EQ(summary.done, 4u);
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_EQ(summary.items, 5u);
  EXPECT_EQ(source.nexts, 5) << "the stream was read past its bad frame";
  EXPECT_EQ(sink.order, (std::vector<std::uint64_t>{0, 1, 2, 3}));
}

TEST(Job, AStopRequestFinishesWhatIsInFlightAndStartsNothing) {
  TestSource source(50, true);
  TestSink sink(source, true);
  auto engine = invert_engine(4);
  JobOptions options;
  options.stop_requested = [&] { return source.nexts >= 6; };
  const JobSummary summary = run_job(source, *engine, sink, options);
  EXPECT_TRUE(summary.stopped);
  EXPECT_EQ(summary.items, 6u);
  EXPECT_EQ(summary.done, 6u);
  EXPECT_EQ(sink.written.size(), 6u);
}

// A GPU engine whose wait for frame `sticky_at` (and every later one) reports an illegal address.
class StickyEngine final : public Engine {
 public:
  StickyEngine(int slots, std::uint64_t sticky_at) : Engine(slots), sticky_at_(sticky_at), buffers_(slots) {}
  std::string describe() const override { return "engine that fails for good"; }

 protected:
  void prepare(FrameSlot& slot, Size in, Size out) override {
    auto& buffer = buffers_[slot.index];
    buffer.resize(std::max(in.rgb_bytes(), out.rgb_bytes()));
    slot.input = {buffer.data(), in};
    slot.output = {buffer.data(), out};
  }
  void start(FrameSlot&) override {}
  void wait(FrameSlot& slot) override {
    if (slot.sequence >= sticky_at_) {
      throw cuda::CudaError(cudaErrorIllegalAddress, "cudaEventSynchronize failed: cudaErrorIllegalAddress");
    }
  }

 private:
  std::uint64_t sticky_at_;
  std::vector<std::vector<std::uint8_t>> buffers_;
};

// A stream's sink takes frames in order, so frames complete in submit order and the items behind the first
// that fails are abandoned or fail.
TEST(Job, AStickyGpuErrorStopsTheJobAndAbandonsWhatFollows) {
  TestSource source(12, true);
  TestSink sink(source, false);
  StickyEngine engine(3, 2);
  std::vector<ItemResult> results;
  const JobSummary summary =
      run_job(source, engine, sink, {}, [&](const ItemResult& result) { results.push_back(result); });
  EXPECT_EQ(summary.device_failure, "cudaEventSynchronize failed: cudaErrorIllegalAddress");
  EXPECT_EQ(summary.done, 2u);
  ASSERT_GE(results.size(), 3u);
  EXPECT_EQ(results[2].status, Status::failed);
  EXPECT_EQ(results[2].stage, Stage::process);
  for (std::size_t i = 3; i < results.size(); ++i) {
    EXPECT_TRUE(results[i].status == Status::abandoned || results[i].status == Status::failed) << i;
  }
  EXPECT_LE(summary.items, 2u + 1 + 3) << "items were started after the GPU failed";
  EXPECT_EQ(sink.written.size(), 2u);
}

// Where frames complete in any order, the frames done after the error are not trusted either: the two frames
// submitted first are written, nothing else is, and the job starts no more than the items already in flight.
TEST(Job, AStickyGpuErrorWithFramesCompletingInAnyOrderWritesNoFrameDoneAfterIt) {
  TestSource source(12, true);
  TestSink sink(source, true);
  StickyEngine engine(3, 2);
  std::vector<ItemResult> results;
  const JobSummary summary =
      run_job(source, engine, sink, {}, [&](const ItemResult& result) { results.push_back(result); });
  EXPECT_EQ(summary.device_failure, "cudaEventSynchronize failed: cudaErrorIllegalAddress");
  EXPECT_LE(summary.done, 2u);
  EXPECT_EQ(sink.written.size(), summary.done);
  int failed_in_process = 0;
  for (const ItemResult& result : results) {
    if (result.status == Status::failed) {
      EXPECT_EQ(result.stage, Stage::process) << result.item.name;
      ++failed_in_process;
    } else if (result.status != Status::abandoned) {
      EXPECT_EQ(result.status, Status::done) << result.item.name;
      EXPECT_TRUE(sink.written.count(result.item.index)) << result.item.name;
    }
  }
  EXPECT_GE(failed_in_process, 1);
  EXPECT_LE(summary.items, 2u + 3 + 1) << "items were started after the GPU failed";
}

// Item 0's read waits until the sink has written `wait_for` other items (or `give_up` passes) and keeps
// what it saw; the other items read at once.
class HeldFirstSource final : public Source {
 public:
  HeldFirstSource(int count, const std::atomic<int>& written, int wait_for, std::chrono::milliseconds give_up)
      : count_(count), written_(written), wait_for_(wait_for), give_up_(give_up) {}
  std::optional<Item> next() override {
    if (next_ == static_cast<std::uint64_t>(count_)) return std::nullopt;
    const std::uint64_t index = next_++;
    ++admitted;
    return Item{index, "item " + std::to_string(index), {}, false, std::nullopt};
  }
  std::vector<std::string> read(const Item& item, const FrameAllocator& allocate) override {
    if (item.index == 0) {
      const auto give_up = std::chrono::steady_clock::now() + give_up_;
      while (written_ < wait_for_ && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // room for any item admitted past the limit
      written_while_held = written_.load();
      admitted_while_held = admitted.load();
    }
    const FrameView frame = allocate({1, 1});
    std::memset(frame.data, static_cast<int>(item.index % 251), frame.size.rgb_bytes());
    return {};
  }
  bool concurrent_reads() const override { return true; }

  std::atomic<int> admitted = 0, written_while_held = 0, admitted_while_held = 0;

 private:
  int count_;
  const std::atomic<int>& written_;
  int wait_for_;
  std::chrono::milliseconds give_up_;
  std::uint64_t next_ = 0;
};

class CountingSink final : public Sink {
 public:
  void write(const Item&, ConstFrameView) override { ++written; }
  bool concurrent_writes() const override { return true; }
  std::atomic<int> written = 0;
};

TEST(Job, WhereTheSinkTakesAnyOrderASlowReadHoldsUpNoOtherItem) {
  CountingSink sink;
  HeldFirstSource source(40, sink.written, 30, std::chrono::seconds(10));
  auto engine = invert_engine(4);
  JobOptions options;
  options.workers = 4;
  std::vector<std::uint64_t> reported;
  const JobSummary summary =
      run_job(source, *engine, sink, options, [&](const ItemResult& result) { reported.push_back(result.item.index); });
  EXPECT_GE(source.written_while_held, 30) << "items behind a slow read waited for it";
  EXPECT_EQ(summary.done, 40u);
  ASSERT_EQ(reported.size(), 40u);
  for (std::uint64_t i = 0; i < 40; ++i) EXPECT_EQ(reported[i], i) << "reports out of item order";
}

TEST(Job, ItemsBehindAnUnreportedOneAreStartedUpToTheLimit) {
  CountingSink sink;
  HeldFirstSource source(kMaxUnreported + 200, sink.written, kMaxUnreported - 1, std::chrono::seconds(20));
  auto engine = invert_engine(8);
  JobOptions options;
  options.workers = 8;
  const JobSummary summary = run_job(source, *engine, sink, options);
  EXPECT_EQ(source.written_while_held, kMaxUnreported - 1) << "items behind the held read did not all finish";
  EXPECT_EQ(source.admitted_while_held, kMaxUnreported) << "the job started items past its limit";
  EXPECT_EQ(summary.done, static_cast<std::uint64_t>(kMaxUnreported + 200));
}

// An engine that keeps "device" frames in host memory, so the job's placements run without a GPU: each slot
// has a host and a device buffer per side, and the chain (invert) reads and writes whichever the placement
// names.
// With `devices` above 1, slot i stands for a slot on device kFirstDevice + i mod devices.
class PlacementEngine final : public Engine {
 public:
  static constexpr int kFirstDevice = 10;
  explicit PlacementEngine(int slots, int devices = 1) : Engine(slots), buffers_(static_cast<std::size_t>(slots)) {
    for (int i = 0; i < slots; ++i) slot_at(i).device = kFirstDevice + i % devices;
  }
  std::string describe() const override { return "placement test engine"; }
  bool device_frames() const override { return true; }

 protected:
  void prepare(FrameSlot& slot, Size in, Size out) override {
    Buffers& b = buffers_[slot.index];
    for (auto* buffer : {&b.host_in, &b.device_in}) buffer->resize(in.rgb_bytes());
    for (auto* buffer : {&b.host_out, &b.device_out}) buffer->resize(out.rgb_bytes());
    if (slot.placement.input == Residence::host) slot.input = {b.host_in.data(), in};
    else slot.device_input = {b.device_in.data(), in, nullptr, slot.device};
    if (slot.placement.output == Residence::host) slot.output = {b.host_out.data(), out};
    else slot.device_output = {b.device_out.data(), out, nullptr, slot.device};
  }
  void start(FrameSlot& slot) override {
    const bool host_in = slot.placement.input == Residence::host;
    const std::uint8_t* in = host_in ? slot.input.data : slot.device_input.data;
    const Size size = host_in ? slot.input.size : slot.device_input.size;
    std::uint8_t* out = slot.placement.output == Residence::host ? slot.output.data : slot.device_output.data;
    for (std::size_t i = 0; i < size.rgb_bytes(); ++i) out[i] = static_cast<std::uint8_t>(255 - in[i]);
  }
  void wait(FrameSlot&) override {}

 private:
  struct Buffers {
    std::vector<std::uint8_t> host_in, device_in, host_out, device_out;
  };
  std::vector<Buffers> buffers_;
};

// Even items decode "on the device", odd ones on the host; items divisible by 3 are written from the device.
class PlacementSource final : public Source {
 public:
  std::optional<Item> next() override {
    if (next_ == kItems) return std::nullopt;
    const std::uint64_t i = next_++;
    return Item{i, "item " + std::to_string(i), {}, false, std::nullopt};
  }
  std::vector<std::string> read(const Item&, const FrameAllocator&) override {
    throw std::logic_error("an engine with device frames gets read_on_device");
  }
  std::vector<std::string> read_on_device(const Item& item, const FrameAllocator& allocate,
                                          const DeviceFrameAllocator& allocate_on_device, int device) override {
    const Size size{static_cast<int>(item.index) + 1, 2};
    std::uint8_t* data = nullptr;
    if (item.index % 2 == 0) {
      const DeviceFrame frame = allocate_on_device(size);
      data = frame.data;
      std::lock_guard lock(mutex_);
      devices[item.index] = {device, frame.device};
    } else {
      data = allocate(size).data;
    }
    std::memset(data, static_cast<int>(item.index), size.rgb_bytes());
    return {};
  }
  // Items decoded "on the device": the device read_on_device was told, and the device of the frame it was given.
  std::map<std::uint64_t, std::pair<int, int>> devices;
  bool concurrent_reads() const override { return true; }
  static constexpr std::uint64_t kItems = 24;

 private:
  std::uint64_t next_ = 0;
  std::mutex mutex_;
};

class PlacementSink final : public Sink {
 public:
  void write(const Item& item, ConstFrameView frame) override { keep(item, frame.data, frame.size, false); }
  bool writes_from_device(const Item& item) const override { return item.index % 3 == 0; }
  void write_from_device(const Item& item, DeviceFrame frame) override {
    keep(item, frame.data, frame.size, true, frame.device);
  }
  bool concurrent_writes() const override { return true; }

  struct Written {
    std::vector<std::uint8_t> bytes;
    bool from_device = false;
    int device = -1;  // of the device frame it was written from
  };
  std::map<std::uint64_t, Written> written;

 private:
  void keep(const Item& item, const std::uint8_t* data, Size size, bool from_device, int device = -1) {
    std::lock_guard lock(mutex_);
    written[item.index] = {std::vector<std::uint8_t>(data, data + size.rgb_bytes()), from_device, device};
  }
  std::mutex mutex_;
};

TEST(Job, EachItemsFrameComesFromAndGoesToWhereTheSourceAndSinkAskOnAnEngineWithDeviceFrames) {
  PlacementSource source;
  PlacementSink sink;
  PlacementEngine engine(5);
  JobOptions options;
  options.workers = 3;
  const JobSummary summary = run_job(source, engine, sink, options);
  EXPECT_EQ(summary.done, PlacementSource::kItems);
  EXPECT_EQ(summary.failed, 0u);
  ASSERT_EQ(sink.written.size(), PlacementSource::kItems);
  for (const auto& [i, written] : sink.written) {
    EXPECT_EQ(written.from_device, i % 3 == 0) << "item " << i;
    ASSERT_EQ(written.bytes.size(), (i + 1) * 2 * 3) << "item " << i;
    EXPECT_EQ(written.bytes.front(), 255 - i) << "item " << i << " got another item's output";
  }
}

// Over several devices the source learns the device of the item's slot before it reads, so that it can decode
// with that device's decoder; the frame it is given, and the frame the sink writes from, are on that device.
TEST(Job, TheSourceIsToldTheDeviceOfItsItemsSlotAndTheFramesAreOnIt) {
  PlacementSource source;
  PlacementSink sink;
  PlacementEngine engine(6, 2);
  JobOptions options;
  options.workers = 4;
  const JobSummary summary = run_job(source, engine, sink, options);
  EXPECT_EQ(summary.done, PlacementSource::kItems);
  ASSERT_EQ(source.devices.size(), PlacementSource::kItems / 2);
  std::set<int> used;  // which of the two, the engine's choice
  for (const auto& [i, told_and_given] : source.devices) {
    const auto [told, given] = told_and_given;
    EXPECT_EQ(told, given) << "item " << i;
    used.insert(given);
    if (sink.written[i].from_device) {
      EXPECT_EQ(sink.written[i].device, given) << "item " << i;
    }
  }
  for (const int device : used) {
    EXPECT_TRUE(device == PlacementEngine::kFirstDevice || device == PlacementEngine::kFirstDevice + 1) << device;
  }
}

TEST(Job, AnEngineWithoutDeviceFramesRefusesADevicePlacement) {
  auto engine = invert_engine(2);
  EXPECT_FALSE(engine->device_frames());
  EXPECT_THROW(engine->acquire({4, 4}, {Residence::device, Residence::host}), std::logic_error);
  EXPECT_EQ(engine->in_flight(), 0);
}

}  // namespace
}  // namespace imgpipe
