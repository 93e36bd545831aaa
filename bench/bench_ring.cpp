#include "bench_ring.hpp"

#include "cuda_check.hpp"

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace imgpipe::bench {

BenchRing::BenchRing(int slots, Size in, Size out) : in_(in), out_(out) {
  if (slots < 1) throw std::invalid_argument("BenchRing: at least one slot");
  slots_.resize(static_cast<std::size_t>(slots));
  for (Slot& s : slots_) {
    s.grow_host(in, out);
    s.grow_device(in, out);
  }
}

BenchRing::~BenchRing() {
  for (const Slot& s : slots_) {
    if (s.stream) cuda::check_noexcept(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize");
  }
}

void BenchRing::fill_inputs(const std::vector<Image>& frames) {
  if (frames.empty()) throw std::invalid_argument("BenchRing::fill_inputs: no frames");
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const Image& frame = frames[s % frames.size()];
    if (frame.size() != in_) throw std::invalid_argument("BenchRing::fill_inputs: frame of another size");
    std::memcpy(slots_[s].host_in.data(), frame.data(), frame.bytes());
  }
}

double BenchRing::run(int frames, std::vector<TraceSpan>* trace) {
  if (!work_) throw std::logic_error("BenchRing::run before set_work");
  const std::size_t in_bytes = in_.rgb_bytes(), out_bytes = out_.rgb_bytes();
  const int stages = 4;  // events per frame: before upload, after upload, after work, after download
  std::vector<cuda::Event> events;
  cuda::Event base;
  if (trace != nullptr) {
    events.reserve(static_cast<std::size_t>(frames) * stages);
    for (int i = 0; i < frames * stages; ++i) events.push_back(cuda::Event::create(true));
    base = cuda::Event::create(true);
    // Every stream starts after the base event, so no span can precede time zero.
    base.record(stream(0));
    for (int s = 1; s < slots(); ++s) IMGPIPE_CUDA_CHECK(cudaStreamWaitEvent(stream(s), base.get(), 0));
  }
  const auto mark = [&](int frame, int stage, cudaStream_t st) {
    if (trace != nullptr) events[static_cast<std::size_t>(frame) * stages + stage].record(st);
  };

  const auto start = std::chrono::steady_clock::now();
  for (int f = 0; f < frames; ++f) {
    const int index = f % slots();
    Slot& s = slots_[static_cast<std::size_t>(index)];
    if (s.busy) s.done.synchronize();
    const cudaStream_t st = s.stream.get();
    mark(f, 0, st);
    {
      const NvtxRange range("upload");
      IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(s.device_in.data(), s.host_in.data(), in_bytes, cudaMemcpyHostToDevice, st));
    }
    mark(f, 1, st);
    {
      const NvtxRange range("chain");
      work_(index, s.device_in.data(), s.device_out.data(), st);
    }
    mark(f, 2, st);
    {
      const NvtxRange range("download");
      IMGPIPE_CUDA_CHECK(
          cudaMemcpyAsync(s.host_out.data(), s.device_out.data(), out_bytes, cudaMemcpyDeviceToHost, st));
    }
    mark(f, 3, st);
    s.done.record(st);
    s.busy = true;
  }
  for (Slot& s : slots_) {
    if (s.busy) s.done.synchronize();
    s.busy = false;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (trace != nullptr) {
    const char* names[3] = {"upload", "chain", "download"};
    const char* categories[3] = {"h2d", "kernel", "d2h"};
    const double bytes[3] = {static_cast<double>(in_bytes), 0.0, static_cast<double>(out_bytes)};
    for (int f = 0; f < frames; ++f) {
      for (int k = 0; k < 3; ++k) {
        const cuda::Event& a = events[static_cast<std::size_t>(f) * stages + k];
        const cuda::Event& b = events[static_cast<std::size_t>(f) * stages + k + 1];
        const double begin_us = 1000.0 * cuda::Event::elapsed_ms(base, a);
        const double end_us = 1000.0 * cuda::Event::elapsed_ms(base, b);
        trace->push_back({names[k], categories[k], f % slots(), begin_us, end_us - begin_us, f, bytes[k]});
      }
    }
  }
  return seconds;
}

}  // namespace imgpipe::bench
