// A slot ring for the benchmark's own measurements: the engine's GPU ring slots (pipeline/device_slot.hpp, pinned)
// and its issue order (pipeline/engine.cpp, simpleMultiCopy's loop), but with a caller's device work per frame and, when asked, CUDA events around every
// upload, chain and download. It drives the NPP peer end to end and records the --trace timeline; the
// throughput rows of imgpipe's own paths go through the real Engine.
//
// Per frame f, on slot s = f mod slots: wait for s's previous frame, then on s's stream:
//   [event] upload (pinned -> device) [event] work [event] download (device -> pinned) [event] done
// so slot s computes while slot s+1 uploads and slot s-1 downloads.
#pragma once

#include "bench_report.hpp"
#include "device_slot.hpp"
#include "image.hpp"
#include "nvtx_range.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace imgpipe::bench {

using cuda::NvtxRange;

class BenchRing {
 public:
  // Work for one frame: device input and output of slot `slot`, enqueued on `stream`.
  using Work = std::function<void(int slot, const std::uint8_t* in, std::uint8_t* out, cudaStream_t stream)>;

  BenchRing(int slots, Size in, Size out);
  ~BenchRing();  // waits for every slot
  BenchRing(const BenchRing&) = delete;
  BenchRing& operator=(const BenchRing&) = delete;

  int slots() const { return static_cast<int>(slots_.size()); }
  cudaStream_t stream(int slot) const { return slots_[slot].stream.get(); }
  void set_work(Work work) { work_ = std::move(work); }
  // Writes frames[s mod frames.size()] into slot s's pinned input (as a decoder writing into the slot would).
  void fill_inputs(const std::vector<Image>& frames);

  // Runs `frames` frames and waits for all; returns the wall-clock seconds. With `trace`, each frame's upload,
  // work and download become spans (microseconds from a common start event) appended to *trace.
  double run(int frames, std::vector<TraceSpan>* trace = nullptr);

 private:
  struct Slot : DeviceSlot {
    Slot() : DeviceSlot(MemoryMode::pinned) {}
    bool busy = false;  // a frame was queued since the last wait on `done`
  };
  Size in_, out_;
  std::vector<Slot> slots_;
  Work work_;
};

}  // namespace imgpipe::bench
