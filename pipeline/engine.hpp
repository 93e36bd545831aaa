// The engine: a ring of frame slots, so reading, uploading, computing, downloading and writing of different
// frames overlap. The caller lends its threads: it fills a slot's input (decoding straight into the engine's
// buffer, pinned when the engine has pinned memory), submits it, and takes outputs back, in submit order
// (next_completed) or each as soon as it is done (wait_until_done).
//
//   acquire(size) -> write slot.input -> submit(slot) ... next_completed() -> read slot.output -> release(slot)
//                                                      ... wait_until_done(slot) ->
//
// At most slots() frames exist at once: acquire() blocks while all are in use, so a slow writer slows the
// reader and memory stays bounded. Nothing is dropped.
//
// Engines that keep frames on the device (device_frames()) also lend a slot's device buffers: a GPU decoder
// writes the input there and a GPU encoder reads the output there, so that no raw frame crosses PCIe.
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
  Arithmetic arithmetic = Arithmetic::fast;  // GPU paths only; the cpu backend is always exact
  // The CUDA devices the GPU ring spreads its slots over, each slot on one of them; empty: the current device.
  std::vector<int> devices;
};
constexpr int kMaxSlots = 128;  // a GPU JPEG decoder has as many files waiting as there are frames in flight
// "0,2": devices as --devices names them.
std::string device_list_text(const std::vector<int>& devices);

// Where a slot's input comes from and where its output goes: host memory, which the engine copies over PCIe,
// or the slot's own device buffers.
enum class Residence { host, device };
struct Placement {
  Residence input = Residence::host;
  Residence output = Residence::host;
};

// A frame in device memory (packed interleaved RGB8) and the stream that orders work on it.
struct DeviceFrame {
  std::uint8_t* data = nullptr;
  Size size;
  cudaStream_t stream = nullptr;
  int device = 0;  // the CUDA device `data` and `stream` belong to
};

struct FrameSlot {
  int index = 0;
  int device = 0;              // the CUDA device of the slot's device buffers (GPU engines)
  std::uint64_t sequence = 0;  // submit order, from 0
  Placement placement;         // as acquire() was asked
  // Host input and output, where the placement says host; input valid from acquire() to submit(), output
  // from next_completed() or wait_until_done() to release().
  FrameView input;
  FrameView output;
  // Device input and output, where the placement says device, for the same spans. The input must be written
  // before submit(): complete, or enqueued on device_input.stream (the slot's stream).
  DeviceFrame device_input;
  DeviceFrame device_output;
};

class Engine {
 public:
  explicit Engine(int slots);
  virtual ~Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  virtual std::string describe() const = 0;
  int slots() const { return static_cast<int>(slots_.size()); }

  // True when acquire() takes a device placement (the GPU ring with device buffers).
  virtual bool device_frames() const { return false; }

  // Blocks until a slot is free, then sizes its buffers for a frame of `in_size` (growing, never shrinking)
  // in the places `placement` names: take() and then fit().
  FrameSlot& acquire(Size in_size, Placement placement = {});
  // The two halves of acquire(), for a caller that must know the slot's device before it knows the frame's
  // size (a GPU decoder with a handle per device): take() blocks until a slot is free and holds it; fit()
  // sizes it. A slot whose fit() threw is still held: release() it.
  FrameSlot& take();
  void fit(FrameSlot& slot, Size in_size, Placement placement = {});
  // Starts the chain on the slot's input. GPU engines return at once. One thread submits at a time.
  void submit(FrameSlot& slot);
  // The oldest submitted frame once its output is complete; nullptr when none is in flight.
  FrameSlot* next_completed();
  // Returns once the output of `slot`, submitted and not yet completed, is complete, whatever frames were
  // submitted before it: for callers that need no order. Throws std::logic_error for a slot not in flight.
  void wait_until_done(FrameSlot& slot);
  void release(FrameSlot& slot);
  int in_flight() const;

 protected:
  const Chain& chain() const { return chain_; }
  void set_chain(const Chain& chain) { chain_ = chain; }
  // Grow slot `index`'s buffers for these sizes where slot.placement puts them, and point the slot's views
  // at them.
  virtual void prepare(FrameSlot& slot, Size in, Size out) = 0;
  virtual void start(FrameSlot& slot) = 0;
  virtual void wait(FrameSlot& slot) = 0;
  // Which of the free slots take() hands out, as a position in `free` (never empty), under the engine's lock;
  // the last one by default, so a lone caller keeps reusing the slot whose buffers fit already.
  virtual std::size_t choose_free_slot(const std::vector<int>& free) { return free.size() - 1; }
  FrameSlot& slot_at(int index) { return slots_[static_cast<std::size_t>(index)]; }

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
// event and its own planned DeviceChain, so slots never share scratch memory. Over several devices
// (EngineOptions::devices) the slots are dealt out among them, and take() hands out a free slot of the device
// with the least work still queued, so a slower device gets fewer frames instead of holding back the others;
// next_completed() still gives the frames in submit order.
std::unique_ptr<Engine> make_gpu_engine(GpuPath path, const Chain& chain, const EngineOptions& options);

}  // namespace imgpipe
