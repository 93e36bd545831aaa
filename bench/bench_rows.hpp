// What every measuring file of imgpipe bench shares: making, measuring and recording a row, timing on the host
// clock or on a stream, and pools of device frames. Internal to bench/.
#pragma once

#include "bench_measure.hpp"
#include "bench_report.hpp"
#include "bench_support.hpp"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "image.hpp"
#include "nvtx_range.hpp"
#include "planes.hpp"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace imgpipe::bench {

using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------------------------------ rows

inline Row make_row(std::string section, std::string group, std::string name, std::string detail, double bytes,
             std::string ceiling, std::string twin = "") {
  Row r;
  r.section = std::move(section);
  r.group = std::move(group);
  r.name = std::move(name);
  r.detail = std::move(detail);
  r.bytes_per_frame = bytes;
  r.ceiling = std::move(ceiling);
  r.twin = std::move(twin);
  return r;
}

inline void progress(const Row& r) {
  if (r.status == "ok") {
    std::fprintf(stderr, "  %-10s %-24s %-38s %10.2f us/frame  %9.0f fps  spread %4.1f%%\n", r.section.c_str(),
                 r.group.c_str(), r.name.c_str(), r.us_per_frame, 1e6 / r.us_per_frame, 100 * r.spread);
  } else {
    std::fprintf(stderr, "  %-10s %-24s %-38s %s: %s\n", r.section.c_str(), r.group.c_str(), r.name.c_str(),
                 r.status.c_str(), r.reason.c_str());
  }
}

inline void finish(Row& row, const Settings& s, const std::vector<double>& us_per_frame) {
  const Summary summary = summarize(us_per_frame);
  row.frames = s.frames_per_repeat;
  row.repeats = static_cast<int>(us_per_frame.size());
  row.us_per_frame = summary.median;
  row.spread = summary.spread;
  row.samples_us = us_per_frame;
}

// Measures one row; an exception makes it a failed row with the reason, and the run goes on.
template <class Measure>
void add_row(Report& report, Row row, Measure&& measure) {
  const std::string label = row.section + "/" + row.group + "/" + row.name;
  const cuda::NvtxRange range(label.c_str());
  try {
    measure(row);
  } catch (const std::exception& e) {
    row.status = "failed";
    row.reason = e.what();
  }
  progress(row);
  report.rows.push_back(std::move(row));
}

inline void add_skipped(Report& report, Row row, const std::string& reason) {
  row.status = "skipped";
  row.reason = reason;
  if (reason.rfind(kNeedsDevice, 0) != 0) progress(row);  // without a device, one note says it for all
  report.rows.push_back(std::move(row));
}

inline std::string gpu_missing_reason(const Report& report) {
  return std::string(kNeedsDevice) + " (" + report.device.reason + ")";
}

// ---------------------------------------------------------------------------------------- timing

// Host clock: `run(count)` processes `count` frames and returns when they are complete.
inline std::vector<double> time_host(const Settings& s, const std::function<void(int count)>& run) {
  if (s.warmup > 0) run(s.warmup);
  std::vector<double> us;
  for (int r = 0; r < s.repeats; ++r) {
    const auto start = Clock::now();
    run(s.frames_per_repeat);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    us.push_back(1e6 * seconds / s.frames_per_repeat);
  }
  return us;
}

// CUDA events on `stream`: `enqueue(first, count)` queues frames first .. first + count - 1 on it.
inline std::vector<double> time_stream(const Settings& s, cudaStream_t stream,
                                const std::function<void(int first, int count)>& enqueue) {
  const cuda::Event start = cuda::Event::create(true), stop = cuda::Event::create(true);
  const int warmup = std::max(1, s.warmup);
  enqueue(0, warmup);
  IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> us;
  int next = warmup;
  for (int r = 0; r < s.repeats; ++r) {
    start.record(stream);
    enqueue(next, s.frames_per_repeat);
    stop.record(stream);
    stop.synchronize();
    next += s.frames_per_repeat;
    us.push_back(1000.0 * cuda::Event::elapsed_ms(start, stop) / s.frames_per_repeat);
  }
  return us;
}

// ----------------------------------------------------------------------------------- device pools

// `count` packed RGB8 frames of up to `frame_bytes` each, back to back in device memory.
class AosPool {
 public:
  AosPool(std::size_t frame_bytes, int count)
      : frame_bytes_(frame_bytes), count_(count), buffer_(frame_bytes * static_cast<std::size_t>(count)) {}
  std::uint8_t* frame(int i) const { return buffer_.data() + frame_bytes_ * static_cast<std::size_t>(i % count_); }
  cuda::AosView view(int i, Size s) const { return {frame(i), {s.width, s.height}, 3 * std::size_t(s.width)}; }
  cuda::ConstAosView const_view(int i, Size s) const {
    return {frame(i), {s.width, s.height}, 3 * std::size_t(s.width)};
  }
  int count() const { return count_; }
  // Frame i = frames[i mod frames.size()].
  void upload(const std::vector<Image>& frames, cudaStream_t stream) const {
    for (int i = 0; i < count_; ++i) {
      const Image& f = frames[static_cast<std::size_t>(i) % frames.size()];
      IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(frame(i), f.data(), f.bytes(), cudaMemcpyHostToDevice, stream));
    }
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

 private:
  std::size_t frame_bytes_;
  int count_;
  cuda::DeviceBuffer buffer_;
};

}  // namespace imgpipe::bench
