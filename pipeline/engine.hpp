// The engine: a ring of frame slots, so reading, uploading, computing, downloading and writing of different
// frames overlap. The caller lends its threads: it fills a slot's input (decoding straight into the engine's
// buffer, pinned when the engine has pinned memory), submits it, and takes outputs back in submit order.
//
//   acquire(size) -> write slot.input -> submit(slot) ... next_completed() -> read slot.output -> release(slot)
//
// At most slots() frames exist at once: acquire() blocks while all are in use, so a slow writer slows the
// reader and memory stays bounded. Nothing is dropped.
#pragma once

#include "backend.hpp"
#include "chain.hpp"
#include "gpu_backend.hpp"
#include "image.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace imgpipe {

// Where the GPU engine keeps host frames: pageable (std::vector, staged copies), pinned (page-locked, copied
// asynchronously at full PCIe rate) or managed (unified memory the kernels read directly, migrated on demand
// or prefetched with cudaMemPrefetchAsync).
enum class MemoryMode { pageable, pinned, managed };
std::string_view to_string(MemoryMode mode);
MemoryMode parse_memory_mode(std::string_view name);  // throws std::invalid_argument

struct EngineOptions {
  int slots = 3;                          // frames in flight, 1..kMaxSlots
  MemoryMode memory = MemoryMode::pinned;  // GPU ring engine only
  bool prefetch = true;                   // managed memory only
};
constexpr int kMaxSlots = 16;

struct FrameSlot {
  int index = 0;
  std::uint64_t sequence = 0;  // submit order, from 0
  FrameView input;             // valid from acquire() to submit()
  FrameView output;            // valid from next_completed() to release()
};

class Engine {
 public:
  explicit Engine(int slots);
  virtual ~Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  virtual std::string describe() const = 0;
  int slots() const { return static_cast<int>(slots_.size()); }

  // Blocks until a slot is free, then sizes its buffers for a frame of `in_size` (growing, never shrinking).
  FrameSlot& acquire(Size in_size);
  // Starts the chain on the slot's input. GPU engines return at once; frames complete in submit order.
  // One thread submits at a time.
  void submit(FrameSlot& slot);
  // The oldest submitted frame once its output is complete; nullptr when none is in flight.
  FrameSlot* next_completed();
  void release(FrameSlot& slot);
  int in_flight() const;

 protected:
  const Chain& chain() const { return chain_; }
  void set_chain(const Chain& chain) { chain_ = chain; }
  // Grow slot `index`'s buffers for these sizes and point slot.input / slot.output at them.
  virtual void prepare(FrameSlot& slot, Size in, Size out) = 0;
  virtual void start(FrameSlot& slot) = 0;
  virtual void wait(FrameSlot& slot) = 0;

 private:
  Chain chain_;
  std::vector<FrameSlot> slots_;
  std::vector<int> free_;
  std::deque<int> submitted_;
  std::uint64_t next_sequence_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable slot_freed_;
};

// Any backend behind the engine interface, one frame at a time in the caller's thread (cpu, and the naive
// GPU path: pageable buffers, synchronous copies, one stream).
std::unique_ptr<Engine> make_backend_engine(std::unique_ptr<Backend> backend, const Chain& chain, int slots);

// The GPU ring: each slot owns host in/out buffers (per MemoryMode), device buffers, a stream, a completion
// event and its own planned DeviceChain, so slots never share scratch memory.
std::unique_ptr<Engine> make_gpu_engine(GpuPath path, const Chain& chain, const EngineOptions& options);

}  // namespace imgpipe
