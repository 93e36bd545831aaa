#include "engine.hpp"

#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "device_slot.hpp"
#include "nvtx_range.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace imgpipe {

std::string_view to_string(MemoryMode mode) {
  switch (mode) {
    case MemoryMode::pageable: return "pageable";
    case MemoryMode::pinned: return "pinned";
    case MemoryMode::managed: return "managed";
  }
  throw std::invalid_argument("unknown memory mode");
}

MemoryMode parse_memory_mode(std::string_view name) {
  if (name == "pageable") return MemoryMode::pageable;
  if (name == "pinned") return MemoryMode::pinned;
  if (name == "managed") return MemoryMode::managed;
  throw std::invalid_argument("memory mode '" + std::string(name) + "': expected pageable, pinned or managed");
}

std::string device_list_text(const std::vector<int>& devices) {
  std::string text;
  for (const int d : devices) {
    if (!text.empty()) text += ',';
    text += std::to_string(d);
  }
  return text;
}

Engine::Engine(int slots) {
  if (slots < 1 || slots > kMaxSlots) {
    throw std::invalid_argument("engine slots: " + std::to_string(slots) + " is not in 1.." + std::to_string(kMaxSlots));
  }
  slots_.resize(static_cast<std::size_t>(slots));
  for (int i = slots - 1; i >= 0; --i) {
    slots_[i].index = i;
    free_.push_back(i);
  }
}

namespace {

// "frame N: what" as an NVTX range name (Nsight Systems shows which frame the host is working on or waiting for).
struct FrameRangeName {
  char text[64];
  FrameRangeName(std::uint64_t sequence, const char* what) {
    std::snprintf(text, sizeof text, "frame %llu: %s", static_cast<unsigned long long>(sequence), what);
  }
};

}  // namespace

FrameSlot& Engine::acquire(Size in_size, Placement placement) {
  FrameSlot& slot = take();
  try {
    fit(slot, in_size, placement);
  } catch (...) {
    release(slot);
    throw;
  }
  return slot;
}

FrameSlot& Engine::take() {
  const cuda::NvtxRange range("engine: wait for a free slot");
  std::unique_lock lock(mutex_);
  slot_freed_.wait(lock, [this] { return !free_.empty(); });
  const auto chosen = free_.begin() + static_cast<std::ptrdiff_t>(choose_free_slot(free_));
  const int index = *chosen;
  free_.erase(chosen);
  return slots_[index];
}

void Engine::fit(FrameSlot& slot, Size in_size, Placement placement) {
  if ((placement.input == Residence::device || placement.output == Residence::device) && !device_frames()) {
    throw std::logic_error("engine: " + describe() + " keeps no frames on the device");
  }
  slot.placement = placement;
  slot.input = slot.output = {};
  slot.device_input = slot.device_output = {};
  prepare(slot, in_size, output_size(chain_, in_size));
}

void Engine::submit(FrameSlot& slot) {
  {
    std::lock_guard lock(mutex_);
    slot.sequence = next_sequence_++;
    submitted_.push_back(slot.index);
  }
  try {
    const cuda::NvtxRange range(FrameRangeName(slot.sequence, "submit").text);
    start(slot);
  } catch (...) {
    std::lock_guard lock(mutex_);  // never started: nobody may wait for it; the caller still holds the slot
    submitted_.erase(std::find(submitted_.begin(), submitted_.end(), slot.index));
    throw;
  }
}

FrameSlot* Engine::next_completed() {
  int index = 0;
  {
    std::lock_guard lock(mutex_);
    if (submitted_.empty()) return nullptr;
    index = submitted_.front();
    submitted_.pop_front();
  }
  {
    const cuda::NvtxRange range(FrameRangeName(slots_[index].sequence, "wait until done").text);
    wait(slots_[index]);
  }
  return &slots_[index];
}

void Engine::wait_until_done(FrameSlot& slot) {
  {
    std::lock_guard lock(mutex_);
    const auto found = std::find(submitted_.begin(), submitted_.end(), slot.index);
    if (found == submitted_.end()) {
      throw std::logic_error("engine: slot " + std::to_string(slot.index) + " is not in flight");
    }
    submitted_.erase(found);
  }
  const cuda::NvtxRange range(FrameRangeName(slot.sequence, "wait until done").text);
  wait(slot);
}

void Engine::release(FrameSlot& slot) {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(slot.index);
  }
  slot_freed_.notify_one();
}

int Engine::in_flight() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(submitted_.size());
}

namespace {

// A synchronous backend: the frame is done when submit() returns.
class BackendEngine final : public Engine {
 public:
  BackendEngine(std::unique_ptr<Backend> backend, const Chain& chain, int slots)
      : Engine(slots), backend_(std::move(backend)), buffers_(static_cast<std::size_t>(slots)) {
    set_chain(chain);
    backend_->set_chain(chain);
  }

  std::string describe() const override { return backend_->name() + ", synchronous, pageable host buffers"; }

 protected:
  void prepare(FrameSlot& slot, Size in, Size out) override {
    auto& b = buffers_[slot.index];
    if (b.input.size() < in.rgb_bytes()) b.input.resize(in.rgb_bytes());
    if (b.output.size() < out.rgb_bytes()) b.output.resize(out.rgb_bytes());
    slot.input = {b.input.data(), in};
    slot.output = {b.output.data(), out};
  }
  void start(FrameSlot& slot) override { backend_->process(slot.input, slot.output); }
  void wait(FrameSlot&) override {}

 private:
  struct Buffers {
    std::vector<std::uint8_t> input, output;
  };
  std::unique_ptr<Backend> backend_;
  std::vector<Buffers> buffers_;
};

class GpuRingEngine final : public Engine {
  struct Slot;

 public:
  GpuRingEngine(GpuPath path, const Chain& chain, const EngineOptions& options)
      : Engine(options.slots), path_(path), options_(options) {
    if (!cuda::device_available()) throw std::runtime_error("the GPU engine needs a CUDA device; none is usable here");
    set_chain(chain);
    if (options_.devices.empty()) {
      int current = 0;
      IMGPIPE_CUDA_CHECK(cudaGetDevice(&current));
      options_.devices = {current};
    }
    check_devices(options_.devices);
    if (options.slots < static_cast<int>(options_.devices.size())) {
      throw std::invalid_argument("engine slots: " + std::to_string(options.slots) + " cannot be spread over " +
                                  std::to_string(options_.devices.size()) + " devices; give at least one per device");
    }
    // Dealt out in turn, so the first frames in flight go to different devices.
    for (int i = 0; i < options.slots; ++i) {
      const int group = i % static_cast<int>(options_.devices.size());
      const int device = options_.devices[static_cast<std::size_t>(group)];
      const cuda::CurrentDevice current(device);
      ring_.push_back(std::make_unique<Slot>(path, chain, options, group));
      slot_at(i).device = device;
    }
  }

  // Buffers must outlive the work queued on them, and each slot is freed with its own device current.
  ~GpuRingEngine() override {
    for (auto& s : ring_) {
      const cuda::CurrentDevice current(options_.devices[static_cast<std::size_t>(s->group)]);
      cuda::check_noexcept(cudaStreamSynchronize(s->stream.get()), "cudaStreamSynchronize");
      s.reset();
    }
  }

  bool device_frames() const override { return options_.memory != MemoryMode::managed; }

  std::string describe() const override {
    return std::string(path_ == GpuPath::naive ? "naive" : "optimized") + " GPU path, " +
           std::to_string(slots()) + " slots" +
           (options_.devices.size() > 1 ? " over devices " + device_list_text(options_.devices) : "") + ", " +
           std::string(to_string(options_.memory)) + " host memory" +
           (options_.memory == MemoryMode::managed ? (options_.prefetch ? " with prefetch" : " without prefetch") : "") +
           (options_.arithmetic == Arithmetic::exact ? ", OpenCV-exact arithmetic" : "");
  }

 protected:
  void prepare(FrameSlot& slot, Size in, Size out) override {
    Slot& s = *ring_[slot.index];
    const cuda::CurrentDevice current(slot.device);
    const bool host_in = slot.placement.input == Residence::host;
    const bool host_out = slot.placement.output == Residence::host;
    s.grow_host(host_in ? in : Size{}, host_out ? out : Size{});
    try {
      s.grow_device(in, out);
    } catch (const cuda::CudaBadAlloc&) {
      free_device_memory(s);
      throw;
    }
    if (host_in) slot.input = {s.host_in.data(), in};
    if (host_out) slot.output = {s.host_out.data(), out};
    if (!host_in) slot.device_input = {s.device_in.data(), in, s.stream.get(), slot.device};
    if (!host_out) slot.device_output = {s.device_out.data(), out, s.stream.get(), slot.device};
  }

  // Issue order per slot: upload, chain, download, event, all on the slot's stream, so slot i's kernels
  // run while slot i+1 uploads and slot i-1 downloads (copy engines for each direction work independently).
  void start(FrameSlot& slot) override {
    Slot& s = *ring_[slot.index];
    const cuda::CurrentDevice current(slot.device);
    try {
      enqueue(slot, s);
    } catch (const cuda::CudaBadAlloc&) {
      free_device_memory(s);
      throw;
    }
    s.progress = Progress::running;
  }

  void enqueue(FrameSlot& slot, Slot& s) {
    const cudaStream_t stream = s.stream.get();
    const std::size_t in_bytes = slot.input.size.rgb_bytes();
    const std::size_t out_bytes = slot.output.size.rgb_bytes();
    if (options_.memory == MemoryMode::managed) {
      if (options_.prefetch) {
        const cudaMemLocation device{cudaMemLocationTypeDevice, slot.device};
        IMGPIPE_CUDA_CHECK(cudaMemPrefetchAsync(slot.input.data, in_bytes, device, 0, stream));
      }
      s.chain.run(slot.input.data, slot.input.size, slot.output.data, stream);
      if (options_.prefetch) {
        IMGPIPE_CUDA_CHECK(cudaMemPrefetchAsync(slot.output.data, out_bytes, host_location(), 0, stream));
      }
    } else {
      const Size in_size = slot.placement.input == Residence::host ? slot.input.size : slot.device_input.size;
      if (slot.placement.input == Residence::host) {
        IMGPIPE_CUDA_CHECK(
            cudaMemcpyAsync(s.device_in.data(), slot.input.data, in_bytes, cudaMemcpyHostToDevice, stream));
      }
      s.chain.run(s.device_in.data(), in_size, s.device_out.data(), stream);
      if (slot.placement.output == Residence::host) {
        IMGPIPE_CUDA_CHECK(
            cudaMemcpyAsync(slot.output.data, s.device_out.data(), out_bytes, cudaMemcpyDeviceToHost, stream));
      }
    }
    s.done.record(stream);
  }

  void wait(FrameSlot& slot) override { ring_[slot.index]->done.synchronize(); }

  // A free slot of the device with the least work still queued: slots taken and not yet started, or started
  // and not yet done. One device: the default. Only running slots need their event asked, and a slot seen
  // finished is remembered as such until it is taken again.
  std::size_t choose_free_slot(const std::vector<int>& free) override {
    const std::size_t groups = options_.devices.size();
    if (groups == 1) return Engine::choose_free_slot(free);
    std::vector<int> queued(groups, 0);
    std::vector<bool> is_free(ring_.size(), false);
    for (const int i : free) is_free[static_cast<std::size_t>(i)] = true;
    for (std::size_t i = 0; i < ring_.size(); ++i) {
      Slot& s = *ring_[i];
      if (is_free[i] || s.progress == Progress::finished) continue;
      if (s.progress == Progress::running && cudaEventQuery(s.done.get()) != cudaErrorNotReady) {
        s.progress = Progress::finished;
        continue;
      }
      ++queued[s.group];
    }
    std::size_t best = free.size() - 1;
    for (std::size_t k = free.size(); k-- > 0;) {
      if (queued[ring_[free[k]]->group] < queued[ring_[free[best]]->group]) best = k;
    }
    ring_[free[best]]->progress = Progress::taken;
    return best;
  }

 private:
  // Where a slot is since it was last taken: not yet submitted, submitted (`done` says whether it finished), or
  // seen finished.
  enum class Progress { taken, running, finished };

  struct Slot : DeviceSlot {
    Slot(GpuPath path, const Chain& chain, const EngineOptions& options, int device_group)
        : DeviceSlot(options.memory), chain(path, chain, options.arithmetic), group(device_group) {}
    DeviceChain chain;
    int group;                          // its device's position in EngineOptions::devices
    std::atomic<Progress> progress = Progress::finished;
  };

  static void check_devices(const std::vector<int>& devices) {
    int count = 0;
    IMGPIPE_CUDA_CHECK(cudaGetDeviceCount(&count));
    for (const int d : devices) {
      if (d < 0 || d >= count) {
        throw std::invalid_argument("CUDA device " + std::to_string(d) + " does not exist: " + std::to_string(count) +
                                    (count == 1 ? " device is" : " devices are") + " visible (0.." +
                                    std::to_string(count - 1) + ")");
      }
    }
  }

  // After an allocation failed for one oversized frame: give back what this slot grew to so far, so later
  // frames of ordinary size still find memory. The chain is planned afresh, without its scratch frames.
  void free_device_memory(Slot& s) {
    s.free_device_buffers();
    s.chain = DeviceChain(path_, chain(), options_.arithmetic);
  }

  static cudaMemLocation host_location() { return {cudaMemLocationTypeHost, 0}; }

  GpuPath path_;
  EngineOptions options_;
  std::vector<std::unique_ptr<Slot>> ring_;
};

}  // namespace

std::unique_ptr<Engine> make_backend_engine(std::unique_ptr<Backend> backend, const Chain& chain, int slots) {
  return std::make_unique<BackendEngine>(std::move(backend), chain, slots);
}

std::unique_ptr<Engine> make_gpu_engine(GpuPath path, const Chain& chain, const EngineOptions& options) {
  return std::make_unique<GpuRingEngine>(path, chain, options);
}

}  // namespace imgpipe
