// How each row of `imgpipe bench` is measured. Method (docs/bench.md): every row runs `warmup` frames untimed,
// then `repeats` timed runs of `frames_per_repeat` frames; the row keeps each run's time per frame, reports the
// median and the spread (max - min) / median. Device-resident rows are timed with CUDA events on their stream
// and rotate through a pool of frames larger than L2; end-to-end rows are timed on the host clock from the
// first submit to the last completed frame.
#include "bench_measure.hpp"

#include "backends.hpp"
#include "bench_rows.hpp"
#include "bench_ring.hpp"
#include "bench_support.hpp"
#include "convolve.cuh"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "engine.hpp"
#include "gpu_backend.hpp"
#include "gray.cuh"
#include "job.hpp"
#include "layout.cuh"
#include "resize.cuh"
#include "transpose.cuh"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <variant>

namespace imgpipe::bench {
namespace {

constexpr const char* kEndToEnd = "end-to-end";
constexpr const char* kGroupDevices = "devices";  // the end-to-end scaling rows
constexpr const char* kKernel = "kernel";
constexpr const char* kStage = "stage";
constexpr const char* kAblation = "ablation";
constexpr std::size_t kPage = 4096;

// ----------------------------------------------------------------------------------------- engines

// Managed memory lives where it was last touched. Without touching the host side of each frame, a prefetched
// input would stay on the device and no byte would cross the bus; a write per page stands for the decoder
// writing the frame, a read per page for the encoder reading the result.
void touch_for_write(std::uint8_t* data, std::size_t bytes) {
  volatile std::uint8_t* v = data;
  for (std::size_t i = 0; i < bytes; i += kPage) v[i] = v[i];
}
unsigned touch_for_read(const std::uint8_t* data, std::size_t bytes) {
  const volatile std::uint8_t* v = data;
  unsigned sum = 0;
  for (std::size_t i = 0; i < bytes; i += kPage) sum += v[i];
  return sum;
}

// A row's frames as a job's source, `count` per run. A slot's input is written once, on the slot's first use
// (as a decoder writing straight into the slot); after that the frame it holds is resubmitted, so the timed
// loop measures the engine and the job, not a memcpy. With `touch`, every frame touches its input pages.
class ResidentFrames final : public Source {
 public:
  ResidentFrames(const std::vector<Image>& frames, bool touch) : frames_(frames), touch_(touch) {}
  void rewind(int count) {
    count_ = static_cast<std::uint64_t>(count);
    next_ = 0;
  }
  std::optional<Item> next() override {
    if (next_ == count_) return std::nullopt;
    return Item{next_++, {}, {}, false, std::nullopt};
  }
  std::vector<std::string> read(const Item&, const FrameAllocator& allocate) override {
    const FrameView slot = allocate(frames_.front().size());
    if (filled_.insert(slot.data).second) {
      const Image& frame = frames_[(filled_.size() - 1) % frames_.size()];
      std::memcpy(slot.data, frame.data(), frame.bytes());
    } else if (touch_) {
      touch_for_write(slot.data, slot.size.rgb_bytes());
    }
    return {};
  }

 private:
  const std::vector<Image>& frames_;
  bool touch_;
  std::set<const std::uint8_t*> filled_;
  std::uint64_t count_ = 0, next_ = 0;
};

// Drops every output; with `touch`, after reading its pages on the host.
class DiscardedFrames final : public Sink {
 public:
  explicit DiscardedFrames(bool touch) : touch_(touch) {}
  void write(const Item&, ConstFrameView frame) override {
    if (touch_) checksum_ += touch_for_read(frame.data, frame.size.rgb_bytes());
  }

 private:
  bool touch_;
  unsigned checksum_ = 0;
};

double frame_bytes(const Settings& s) {
  return static_cast<double>(s.size.rgb_bytes() + s.out_size.rgb_bytes());
}

void measure_engine_row(Report& report, const Settings& s, Row row, const std::function<std::unique_ptr<Engine>()>& make,
                        bool touch) {
  add_row(report, std::move(row), [&](Row& r) {
    const std::unique_ptr<Engine> engine = make();
    r.detail = engine->describe() + (r.detail.empty() ? "" : "; " + r.detail);
    ResidentFrames source(s.frames, touch);
    DiscardedFrames sink(touch);
    finish(r, s, time_host(s, [&](int count) {
             source.rewind(count);
             const JobSummary summary = run_job(source, *engine, sink, {});
             if (summary.first_failure) std::rethrow_exception(summary.first_failure->error);
           }));
  });
}

// `count` plane buffers with room for `extent`.
std::vector<cuda::PlaneBuffer> plane_pool(cuda::Extent extent, int count) {
  std::vector<cuda::PlaneBuffer> pool;
  for (int i = 0; i < count; ++i) pool.emplace_back(extent);
  return pool;
}

cuda::Extent extent_of(Size s) { return {s.width, s.height}; }

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

}  // namespace

// ------------------------------------------------------------------------------------------ device

Device describe_device() {
  Device d;
  int version = 0;
  if (cudaDriverGetVersion(&version) == cudaSuccess && version > 0) {
    d.driver = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  }
  if (cudaRuntimeGetVersion(&version) == cudaSuccess) {
    d.runtime = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  }
  (void)cudaGetLastError();
  d.available = cuda::device_available();
  if (!d.available) {
    for (const BackendInfo& b : available_backends()) {
      if (b.kind == BackendKind::optimized) d.reason = b.detail;
    }
    if (d.reason.empty()) d.reason = "no CUDA device";
    return d;
  }
  int device = 0;
  cudaDeviceProp p{};
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  IMGPIPE_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sms = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.memory_bytes = static_cast<double>(p.totalGlobalMem);
  return d;
}

int device_pool_frames(Size in) {
  int device = 0;
  cudaDeviceProp p{};
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  IMGPIPE_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  const double l2 = std::max(1, p.l2CacheSize);
  const int frames = static_cast<int>(std::ceil(2.0 * l2 / static_cast<double>(std::max<std::size_t>(1, in.rgb_bytes()))));
  return std::clamp(frames, 2, 64);
}

// --------------------------------------------------------------------------------------- ceilings

void measure_host_ceiling(const Settings& s, Report& report) {
  const NvtxRange range("ceiling host_memcpy");
  const std::size_t bytes = std::max<std::size_t>(s.ceiling_bytes, 1 << 20);
  std::vector<std::uint8_t> a(bytes), b(bytes);
  for (std::size_t i = 0; i < bytes; ++i) a[i] = static_cast<std::uint8_t>(i * 131 + (i >> 12));
  const auto copy = [&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, bytes, std::size_t{1} << 20),
                      [&](const tbb::blocked_range<std::size_t>& r) {
                        std::memcpy(b.data() + r.begin(), a.data() + r.begin(), r.size());
                      });
  };
  copy();
  std::vector<double> gbps;
  for (int r = 0; r < std::max(3, s.repeats); ++r) {
    const auto start = Clock::now();
    copy();
    gbps.push_back(2.0 * bytes / std::chrono::duration<double>(Clock::now() - start).count() / 1e9);
  }
  const Summary sum = summarize(gbps);
  report.ceilings.push_back({kHostCopy, "host memcpy, all threads", "bytes read + bytes written",
                             2.0 * bytes, sum.median, sum.spread});
  std::fprintf(stderr, "  ceiling    %-24s %8.1f GB/s\n", kHostCopy, sum.median);
}

// The bound of an end-to-end row: the chain's own frames (input up, output down) through the engine's ring with
// no kernels at all. Unlike pcie_both_pinned it loads the two directions as unevenly as the chain does.
void measure_frame_copies(const Settings& s, Report& report) {
  const NvtxRange range(kPcieFrames);
  BenchRing ring(s.slots, s.size, s.out_size);
  ring.set_work([](int, const std::uint8_t*, std::uint8_t*, cudaStream_t) {});
  ring.fill_inputs(s.frames);
  const double bytes = frame_bytes(s);
  std::vector<double> gbps;
  ring.run(std::max(1, s.warmup));
  for (int r = 0; r < std::max(3, s.repeats); ++r)
    gbps.push_back(s.frames_per_repeat * bytes / (1e9 * ring.run(s.frames_per_repeat)));
  const Summary sum = summarize(gbps);
  report.ceilings.push_back({kPcieFrames,
                             "the chain's frames up and down on " + std::to_string(s.slots) +
                                 " streams, no kernels, pinned",
                             "input bytes up + output bytes down", bytes, sum.median, sum.spread});
  std::fprintf(stderr, "  ceiling    %-24s %8.1f GB/s\n", kPcieFrames, sum.median);
}

void measure_device_ceilings(const Settings& s, Report& report) {
  const std::size_t bytes = std::max<std::size_t>(s.ceiling_bytes, 1 << 20);
  const cuda::PinnedBuffer pinned_a(bytes), pinned_b(bytes);
  const cuda::DeviceBuffer device_a(bytes), device_b(bytes);
  std::vector<std::uint8_t> pageable_a(bytes), pageable_b(bytes);
  for (std::size_t i = 0; i < bytes; ++i) {
    pageable_a[i] = pinned_a.data()[i] = static_cast<std::uint8_t>(i * 131 + (i >> 12));
    pageable_b[i] = 0;
  }
  const cuda::Stream s1 = cuda::Stream::create(), s2 = cuda::Stream::create();
  fill_random(device_b.data(), bytes, 11, s1.get());
  const cuda::Event start = cuda::Event::create(true), mid = cuda::Event::create(true),
                    stop = cuda::Event::create(true);

  // `enqueue` on s1 (and s2, joined back into s1); the rate counts `counted` bytes per run.
  const auto measure = [&](const char* id, const char* label, const char* counts, double counted,
                           const std::function<void()>& enqueue) {
    const NvtxRange range(id);
    enqueue();
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(s1.get()));
    std::vector<double> gbps;
    for (int r = 0; r < std::max(3, s.repeats); ++r) {
      start.record(s1.get());
      enqueue();
      stop.record(s1.get());
      stop.synchronize();
      gbps.push_back(counted / (1e6 * cuda::Event::elapsed_ms(start, stop)));
    }
    const Summary sum = summarize(gbps);
    report.ceilings.push_back({id, label, counts, counted, sum.median, sum.spread});
    std::fprintf(stderr, "  ceiling    %-24s %8.1f GB/s\n", id, sum.median);
  };
  const auto copy = [&](void* dst, const void* src, cudaMemcpyKind kind, cudaStream_t stream) {
    IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));
  };
  const double b = static_cast<double>(bytes);

  measure("pcie_h2d_pinned", "host to device, pinned", "bytes copied", b,
          [&] { copy(device_a.data(), pinned_a.data(), cudaMemcpyHostToDevice, s1.get()); });
  measure("pcie_d2h_pinned", "device to host, pinned", "bytes copied", b,
          [&] { copy(pinned_b.data(), device_b.data(), cudaMemcpyDeviceToHost, s1.get()); });
  measure("pcie_both_pinned", "both directions at once, pinned (sum of the two)", "bytes copied up + bytes copied down",
          2 * b, [&] {
            // s2 starts with s1 (after `start`), s1 ends after s2: the interval covers both copies.
            mid.record(s1.get());
            IMGPIPE_CUDA_CHECK(cudaStreamWaitEvent(s2.get(), mid.get(), 0));
            copy(device_a.data(), pinned_a.data(), cudaMemcpyHostToDevice, s1.get());
            copy(pinned_b.data(), device_b.data(), cudaMemcpyDeviceToHost, s2.get());
            mid.record(s2.get());
            IMGPIPE_CUDA_CHECK(cudaStreamWaitEvent(s1.get(), mid.get(), 0));
          });
  measure("pcie_h2d_pageable", "host to device, pageable", "bytes copied", b,
          [&] { copy(device_a.data(), pageable_a.data(), cudaMemcpyHostToDevice, s1.get()); });
  measure("pcie_d2h_pageable", "device to host, pageable", "bytes copied", b,
          [&] { copy(pageable_b.data(), device_b.data(), cudaMemcpyDeviceToHost, s1.get()); });
  measure(kDeviceCopy, "device to device copy", "bytes read + bytes written", 2 * b,
          [&] { copy(device_b.data(), device_a.data(), cudaMemcpyDeviceToDevice, s1.get()); });
  measure_frame_copies(s, report);
}

// ------------------------------------------------------------------------------------- end to end

// The optimized engine on each device of settings.devices alone, then on all of them at once with as many slots
// per device; the total's twin is the first device alone, so its speedup over the device count is the scaling
// efficiency. The ceiling is one device's link (measured on the current device), so only the lone rows get one.
void measure_device_scaling(const Settings& s, Report& report) {
  if (s.devices.size() < 2 || !s.backends.contains("optimized")) return;
  const std::string first = "device " + std::to_string(s.devices.front());
  const std::string all = "devices " + device_list_text(s.devices);
  for (const int device : s.devices) {
    Row row = make_row(kEndToEnd, kGroupDevices, "device " + std::to_string(device), "", frame_bytes(s), kPcieFrames);
    if (!report.device.available) {
      add_skipped(report, std::move(row), gpu_missing_reason(report));
      continue;
    }
    const EngineOptions options{s.slots, MemoryMode::pinned, true, s.arithmetic, {device}};
    measure_engine_row(report, s, std::move(row), [&] { return make_gpu_engine(GpuPath::optimized, s.chain, options); },
                       false);
  }
  Row total = make_row(kEndToEnd, kGroupDevices, all, "", frame_bytes(s), "", first);
  if (!report.device.available) return add_skipped(report, std::move(total), gpu_missing_reason(report));
  const int slots = std::min(kMaxSlots, s.slots * static_cast<int>(s.devices.size()));
  const EngineOptions options{slots, MemoryMode::pinned, true, s.arithmetic, s.devices};
  measure_engine_row(report, s, std::move(total), [&] { return make_gpu_engine(GpuPath::optimized, s.chain, options); },
                     false);
  const Row& measured = report.rows.back();
  const Derived d = derive(report, measured);
  if (!d.speedup) return;
  char note[256];
  std::snprintf(note, sizeof note, "%s: %.2fx %s alone, scaling efficiency %.0f%% (%zu devices)", all.c_str(),
                *d.speedup, first.c_str(), 100 * *d.speedup / static_cast<double>(s.devices.size()), s.devices.size());
  report.notes.push_back(note);
  std::fprintf(stderr, "  %s\n", note);
}

void measure_end_to_end(const Settings& s, Report& report) {
  const double bytes = frame_bytes(s);
  const std::vector<BackendInfo> infos = available_backends();
  for (const BackendKind kind : {BackendKind::cpu, BackendKind::naive, BackendKind::optimized}) {
    const std::string name(to_string(kind));
    if (!s.backends.contains(name)) continue;
    const BackendInfo info = *std::find_if(infos.begin(), infos.end(), [&](const BackendInfo& b) { return b.kind == kind; });
    Row row = make_row(kEndToEnd, "", name, kind == BackendKind::cpu ? info.detail : "",
                       bytes, kind == BackendKind::cpu ? kHostCopy : kPcieFrames);
    if (!info.usable) {
      add_skipped(report, std::move(row),
                  kind == BackendKind::cpu ? "the cpu backend is " + info.detail : gpu_missing_reason(report));
      continue;
    }
    const EngineOptions options{s.slots, MemoryMode::pinned, true, s.arithmetic, {}};
    measure_engine_row(report, s, std::move(row), [&] { return make_engine(kind, s.chain, options); }, false);
  }

  measure_device_scaling(s, report);

  if (!s.backends.contains("npp")) return;
  Row row = make_row(kEndToEnd, "", "npp", "", bytes, kPcieFrames);
  if (!report.device.available) return add_skipped(report, std::move(row), gpu_missing_reason(report));
  if (const auto why = NppChain::unsupported(s.chain)) return add_skipped(report, std::move(row), *why);
  add_row(report, std::move(row), [&](Row& r) {
    constexpr int kNppStreams = 2;
    BenchRing ring(kNppStreams, s.size, s.out_size);
    std::vector<std::unique_ptr<NppChain>> chains;
    for (int i = 0; i < kNppStreams; ++i) chains.push_back(std::make_unique<NppChain>(s.chain, s.size, ring.stream(i)));
    ring.set_work([&](int slot, const std::uint8_t* in, std::uint8_t* out, cudaStream_t) { chains[slot]->run(in, out); });
    ring.fill_inputs(s.frames);
    r.detail = chains.front()->describe() + "; 2 streams, pinned host buffers, the engine's issue order";
    finish(r, s, time_host(s, [&](int count) { ring.run(count); }));
  });
}

// ----------------------------------------------------------------------------------------- kernels

void measure_kernels(const Settings& s, Report& report) {
  const bool kernel = s.sections.contains("kernel"), stage = s.sections.contains("stage");
  std::vector<std::string> paths;
  for (const char* p : {"naive", "optimized"})
    if (s.backends.contains(p)) paths.push_back(p);
  const bool npp = s.backends.contains("npp");
  const auto path_of = [](const std::string& p) { return p == "naive" ? GpuPath::naive : GpuPath::optimized; };
  const auto path_detail = [](const std::string& p) {
    return p == "naive" ? std::string("DeviceChain naive: AoS kernels, ping-pong between interleaved frames")
                        : std::string("DeviceChain optimized: planes, constant taps, textures, fused stages");
  };

  std::vector<Size> sizes = {s.size};
  for (const Op& op : s.chain.ops) sizes.push_back(output_size(op, sizes.back()));
  const auto stage_group = [&](std::size_t i) { return std::to_string(i + 1) + ": " + to_string(s.chain.ops[i]); };

  if (!report.device.available) {
    const std::string why = gpu_missing_reason(report);
    if (kernel) {
      for (const std::string& p : paths) add_skipped(report, make_row(kKernel, "", p, "", 0, kDeviceCopy), why);
      if (npp) add_skipped(report, make_row(kKernel, "", "npp", "", 0, kDeviceCopy), why);
    }
    if (stage) {
      for (std::size_t i = 0; i < s.chain.ops.size(); ++i)
        for (const std::string& p : paths) add_skipped(report, make_row(kStage, stage_group(i), p, "", 0, kDeviceCopy), why);
    }
    return;
  }

  const cuda::Stream stream_owner = cuda::Stream::create();
  const cudaStream_t stream = stream_owner.get();
  const int pool = s.device_pool;
  const AosPool in(s.size.rgb_bytes(), pool);
  in.upload(s.frames, stream);

  if (kernel) {
    const AosPool out(s.out_size.rgb_bytes(), pool);
    const double bytes = frame_bytes(s);
    for (const std::string& p : paths) {
      add_row(report, make_row(kKernel, "", p, path_detail(p), bytes, kDeviceCopy), [&](Row& r) {
        DeviceChain chain(path_of(p), s.chain, s.arithmetic);
        finish(r, s, time_stream(s, stream, [&](int first, int count) {
                 for (int i = first; i < first + count; ++i) chain.run(in.frame(i), s.size, out.frame(i), stream);
               }));
      });
    }
    if (npp) {
      Row row = make_row(kKernel, "", "npp", "", bytes, kDeviceCopy);
      if (const auto why = NppChain::unsupported(s.chain)) {
        add_skipped(report, std::move(row), *why);
      } else {
        add_row(report, std::move(row), [&](Row& r) {
          NppChain chain(s.chain, s.size, stream);
          r.detail = chain.describe();
          finish(r, s, time_stream(s, stream, [&](int first, int count) {
                   for (int i = first; i < first + count; ++i) chain.run(in.frame(i), out.frame(i));
                 }));
        });
      }
    }
  }

  if (!stage || s.chain.ops.empty()) return;
  // Stage i reads what the chain's first i ops make of the frames, so every op sees realistic content.
  std::unique_ptr<AosPool> stage_in;
  for (std::size_t i = 0; i < s.chain.ops.size(); ++i) {
    const AosPool& from = i == 0 ? in : *stage_in;
    auto to = std::make_unique<AosPool>(sizes[i + 1].rgb_bytes(), pool);
    const Chain one{{s.chain.ops[i]}};
    const double bytes = static_cast<double>(sizes[i].rgb_bytes() + sizes[i + 1].rgb_bytes());
    try {
      DeviceChain make(GpuPath::optimized, one, s.arithmetic);
      for (int f = 0; f < pool; ++f) make.run(from.frame(f), sizes[i], to->frame(f), stream);
      IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream));
    } catch (const std::exception& e) {
      for (const std::string& p : paths) {
        Row row = make_row(kStage, stage_group(i), p, "", bytes, kDeviceCopy);
        row.status = "failed";
        row.reason = std::string("preparing the stage's input: ") + e.what();
        progress(row);
        report.rows.push_back(row);
      }
      stage_in = std::move(to);
      continue;
    }
    for (const std::string& p : paths) {
      const std::string detail = path_detail(p) + "; " + to_string(sizes[i]) + " -> " + to_string(sizes[i + 1]);
      add_row(report, make_row(kStage, stage_group(i), p, detail, bytes, kDeviceCopy), [&](Row& r) {
        DeviceChain chain(path_of(p), one, s.arithmetic);
        finish(r, s, time_stream(s, stream, [&](int first, int count) {
                 for (int f = first; f < first + count; ++f) chain.run(from.frame(f), sizes[i], to->frame(f), stream);
               }));
      });
    }
    stage_in = std::move(to);
  }
}

// ---------------------------------------------------------------------------------------- ablation

namespace {

constexpr const char* kGroupLayout = "layout: AoS vs SoA";
constexpr const char* kGroupResize = "bilinear: hand vs texture";
constexpr const char* kGroupTranspose = "transpose";
constexpr const char* kGroupTaps = "filter taps";
constexpr const char* kGroupBorders = "filter borders";
constexpr const char* kGroupMemory = "host memory";
constexpr const char* kGroupStreams = "streams";
constexpr const char* kGroupGraph = "CUDA graph";

// The filter the taps and border ablations run: the chain's first gaussian or box, else gaussian=5:1.0.
struct FilterChoice {
  std::vector<float> taps;
  cuda::BorderMode border = cuda::BorderMode::reflect101;
  std::string text;
};
FilterChoice choose_filter(const Chain& chain) {
  for (const Op& op : chain.ops) {
    if (const auto* g = std::get_if<Gaussian>(&op)) {
      return {to_float(gaussian_weights(g->ksize, g->sigma)),
              g->border == Border::replicate ? cuda::BorderMode::replicate : cuda::BorderMode::reflect101,
              to_string(op)};
    }
    if (const auto* b = std::get_if<Box>(&op)) {
      return {std::vector<float>(static_cast<std::size_t>(b->ksize), 1.0f / b->ksize),
              b->border == Border::replicate ? cuda::BorderMode::replicate : cuda::BorderMode::reflect101,
              to_string(op)};
    }
  }
  return {to_float(gaussian_weights(5, 1.0)), cuda::BorderMode::reflect101, "gaussian=5:1.0"};
}

// The resize target: the chain's first resize, else two thirds of the frame.
Size choose_resize(const Chain& chain, Size in) {
  for (const Op& op : chain.ops)
    if (const auto* r = std::get_if<Resize>(&op)) return r->size;
  return {std::max(1, in.width * 2 / 3), std::max(1, in.height * 2 / 3)};
}

}  // namespace

void measure_ablations(const Settings& s, Report& report) {
  const FilterChoice filter = choose_filter(s.chain);
  const Size target = choose_resize(s.chain, s.size);
  const Size transposed{s.size.height, s.size.width};
  const double frame2 = 2.0 * static_cast<double>(s.size.rgb_bytes());  // read one frame, write one frame
  const double resize_bytes = static_cast<double>(s.size.rgb_bytes() + target.rgb_bytes());
  const double chain_bytes = frame_bytes(s);

  std::vector<Row> planned = {
      make_row(kAblation, kGroupLayout, "AoS gray_naive", "gray on the interleaved frame, one thread per pixel", frame2,
               kDeviceCopy),
      make_row(kAblation, kGroupLayout, "SoA deinterleave+gray+interleave",
               "to planes, gray_planes (4 pixels per thread, 32-bit words), back to interleaved", frame2, kDeviceCopy,
               "AoS gray_naive"),
      make_row(kAblation, kGroupLayout, "SoA gray_planes, resident planes",
               "gray_planes alone, frames already in planes (what a chain of plane stages pays per stage)", frame2,
               kDeviceCopy, "AoS gray_naive"),
      make_row(kAblation, kGroupLayout, "AoS gray_frames, words",
               "gray on the interleaved frame, 4 pixels per thread in 32-bit words (the optimized path's op at a "
               "chain's ends)",
               frame2, kDeviceCopy, "AoS gray_naive"),
      make_row(kAblation, kGroupResize, "hand, AoS", "resize_linear_naive " + to_string(s.size) + " -> " +
               to_string(target) + ", interleaved", resize_bytes, kDeviceCopy),
      make_row(kAblation, kGroupResize, "hand, AoS, words",
               "resize_linear_aos, one frame per launch (the optimized path's resize on interleaved frames): source "
               "pixels read as words, four output pixels a thread; a frame too small for two waves of those "
               "threads (1080p and below) runs the naive kernel",
               resize_bytes, kDeviceCopy, "hand, AoS"),
      make_row(kAblation, kGroupResize, "hand, planes", "resize_linear_planes_hand, bilinear weights by hand on planes",
               resize_bytes, kDeviceCopy, "hand, AoS"),
      make_row(kAblation, kGroupResize, "texture, planes",
               "resize_linear_planes, the texture unit's linear filtering on planes", resize_bytes, kDeviceCopy,
               "hand, planes"),
      make_row(kAblation, kGroupTranspose, "naive", "reorient_naive transpose, interleaved: coalesced reads, scattered writes",
               frame2, kDeviceCopy),
      make_row(kAblation, kGroupTranspose, "tiled", "reorient_tiled on planes: 32x32 shared tile (bank conflicts)",
               frame2, kDeviceCopy, "naive"),
      make_row(kAblation, kGroupTranspose, "tiled+padded", "reorient_tiled_padded on planes: 32x33 tile", frame2,
               kDeviceCopy, "tiled"),
      make_row(kAblation, kGroupTaps, "global taps", filter.text + ", separable on planes, taps in global memory",
               frame2, kDeviceCopy),
      make_row(kAblation, kGroupTaps, "constant taps", filter.text + ", separable on planes, taps in __constant__",
               frame2, kDeviceCopy, "global taps"),
      make_row(kAblation, kGroupBorders, "per-element borders",
               filter.text + ", every staged element tested against the frame (divergent at edges)", frame2,
               kDeviceCopy),
      make_row(kAblation, kGroupBorders, "block-uniform borders",
               filter.text + ", one inside/outside decision per block", frame2, kDeviceCopy, "per-element borders"),
      make_row(kAblation, kGroupMemory, "pageable", "", chain_bytes, kPcieFrames),
      make_row(kAblation, kGroupMemory, "pinned", "", chain_bytes, kPcieFrames, "pageable"),
      make_row(kAblation, kGroupMemory, "managed, no prefetch", "host touches a byte per page of each frame",
               chain_bytes, kPcieFrames, "pageable"),
      make_row(kAblation, kGroupMemory, "managed + prefetch", "host touches a byte per page of each frame", chain_bytes,
               kPcieFrames, "pageable"),
      make_row(kAblation, kGroupStreams, "1 stream", "", chain_bytes, kPcieFrames),
      make_row(kAblation, kGroupStreams, "2 streams", "", chain_bytes, kPcieFrames, "1 stream"),
      make_row(kAblation, kGroupStreams, "3 streams", "", chain_bytes, kPcieFrames, "1 stream"),
      make_row(kAblation, kGroupStreams, "4 streams", "", chain_bytes, kPcieFrames, "1 stream"),
      make_row(kAblation, kGroupGraph, "launches", "optimized DeviceChain::run per frame, device-resident", chain_bytes,
               kDeviceCopy),
      make_row(kAblation, kGroupGraph, "graph replay",
               "each frame's DeviceChain::run captured once into a CUDA graph, one cudaGraphLaunch per frame",
               chain_bytes, kDeviceCopy, "launches"),
  };
  if (!report.device.available) {
    for (Row& r : planned) add_skipped(report, std::move(r), gpu_missing_reason(report));
    return;
  }
  const auto take = [&](const char* group, const char* name) {
    for (Row& r : planned)
      if (r.group == group && r.name == name) return r;
    throw std::logic_error(std::string("no planned ablation row ") + group + "/" + name);
  };

  const cuda::Stream stream_owner = cuda::Stream::create();
  const cudaStream_t stream = stream_owner.get();
  const int pool = s.device_pool;
  const std::size_t out_bytes = std::max(s.size.rgb_bytes(), target.rgb_bytes());
  const AosPool aos_in(s.size.rgb_bytes(), pool), aos_out(out_bytes, pool);
  aos_in.upload(s.frames, stream);
  const cuda::Extent room{std::max({s.size.width, s.size.height, target.width}),
                          std::max({s.size.width, s.size.height, target.height})};
  std::vector<cuda::PlaneBuffer> planes_in = plane_pool(extent_of(s.size), pool);
  std::vector<cuda::PlaneBuffer> planes_out = plane_pool(room, pool);
  const cuda::Extent e = extent_of(s.size);
  for (int i = 0; i < pool; ++i) cuda::deinterleave(aos_in.const_view(i, s.size), planes_in[i].view(e), stream);
  IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto pin = [&](int i) { return cuda::as_const(planes_in[static_cast<std::size_t>(i % pool)].view(e)); };
  const auto pout = [&](int i, cuda::Extent x) { return planes_out[static_cast<std::size_t>(i % pool)].view(x); };
  const auto device_row = [&](const char* group, const char* name, const std::function<void(int)>& frame) {
    add_row(report, take(group, name), [&](Row& r) {
      finish(r, s, time_stream(s, stream, [&](int first, int count) {
               for (int i = first; i < first + count; ++i) frame(i);
             }));
    });
  };

  // Layout.
  device_row(kGroupLayout, "AoS gray_naive",
             [&](int i) { cuda::gray_naive(aos_in.const_view(i, s.size), aos_out.view(i, s.size), stream); });
  device_row(kGroupLayout, "SoA deinterleave+gray+interleave", [&](int i) {
    cuda::PlanesView work = pout(i, e);
    cuda::deinterleave(aos_in.const_view(i, s.size), work, stream);
    cuda::gray_planes(cuda::as_const(work), work, stream);  // pointwise, in place
    cuda::interleave(cuda::as_const(work), aos_out.view(i, s.size), stream);
  });
  device_row(kGroupLayout, "SoA gray_planes, resident planes",
             [&](int i) { cuda::gray_planes(pin(i), pout(i, e), stream); });
  device_row(kGroupLayout, "AoS gray_frames, words", [&](int i) {
    cuda::gray_frames(cuda::as_frame(aos_in.const_view(i, s.size)), cuda::as_frame(aos_out.view(i, s.size)), stream);
  });

  // Bilinear: hand-written weights vs the texture unit.
  const cuda::Extent te = extent_of(target);
  device_row(kGroupResize, "hand, AoS",
             [&](int i) { cuda::resize_linear_naive(aos_in.const_view(i, s.size), aos_out.view(i, target), stream); });
  device_row(kGroupResize, "hand, AoS, words", [&](int i) {
    const cuda::ConstAosView from = aos_in.const_view(i, s.size);
    const cuda::AosView to = aos_out.view(i, target);
    cuda::resize_linear_aos(from, s.size.rgb_bytes(), to, target.rgb_bytes(), 1, false, stream);
  });
  device_row(kGroupResize, "hand, planes", [&](int i) { cuda::resize_linear_planes_hand(pin(i), pout(i, te), stream); });
  {
    std::vector<std::optional<cuda::LinearPlaneTextures>> textures(static_cast<std::size_t>(pool));
    Row row = take(kGroupResize, "texture, planes");
    if (!cuda::LinearPlaneTextures::fit(planes_in.front().whole())) {
      add_skipped(report, std::move(row), "the texture unit cannot cover planes of this size");
    } else {
      for (int i = 0; i < pool; ++i) textures[static_cast<std::size_t>(i)].emplace(planes_in[static_cast<std::size_t>(i)].whole());
      device_row(kGroupResize, "texture, planes", [&](int i) {
        cuda::resize_linear_planes(*textures[static_cast<std::size_t>(i % pool)], e, pout(i, te), stream);
      });
    }
  }

  // Transpose.
  const cuda::Extent tr = extent_of(transposed);
  device_row(kGroupTranspose, "naive", [&](int i) {
    cuda::reorient_naive(cuda::Reorient::transpose, aos_in.const_view(i, s.size), aos_out.view(i, transposed), stream);
  });
  device_row(kGroupTranspose, "tiled",
             [&](int i) { cuda::reorient_tiled(cuda::Reorient::transpose, pin(i), pout(i, tr), stream); });
  device_row(kGroupTranspose, "tiled+padded",
             [&](int i) { cuda::reorient_tiled_padded(cuda::Reorient::transpose, pin(i), pout(i, tr), stream); });

  // Filter taps and borders: one kernel, one technique swapped at a time.
  {
    const cuda::ConstantTaps constant(filter.taps);
    const cuda::DeviceBuffer global(filter.taps.size() * sizeof(float));
    IMGPIPE_CUDA_CHECK(cudaMemcpy(global.data(), filter.taps.data(), filter.taps.size() * sizeof(float),
                                  cudaMemcpyHostToDevice));
    cuda::wait_for_uploads();
    const auto* global_taps = reinterpret_cast<const float*>(global.data());
    const auto variant = [&](cuda::TapSource source, cuda::BorderPolicy policy) {
      return [&, source, policy](int i) {
        cuda::separable_planes_variant(pin(i), pout(i, e), constant, global_taps, source, policy, filter.border,
                                       stream);
      };
    };
    device_row(kGroupTaps, "global taps", variant(cuda::TapSource::global, cuda::BorderPolicy::block_uniform));
    device_row(kGroupTaps, "constant taps", variant(cuda::TapSource::constant, cuda::BorderPolicy::block_uniform));
    device_row(kGroupBorders, "per-element borders",
               variant(cuda::TapSource::constant, cuda::BorderPolicy::per_element));
    device_row(kGroupBorders, "block-uniform borders",
               variant(cuda::TapSource::constant, cuda::BorderPolicy::block_uniform));
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream));  // the taps outlive the work that reads them
  }

  // Host memory of the ring engine, then its streams (one per slot).
  for (const auto& [name, mode, prefetch] :
       {std::tuple{"pageable", MemoryMode::pageable, false}, std::tuple{"pinned", MemoryMode::pinned, false},
        std::tuple{"managed, no prefetch", MemoryMode::managed, false},
        std::tuple{"managed + prefetch", MemoryMode::managed, true}}) {
    const EngineOptions options{s.slots, mode, prefetch, s.arithmetic, {}};
    measure_engine_row(report, s, take(kGroupMemory, name),
                       [&] { return make_gpu_engine(GpuPath::optimized, s.chain, options); },
                       mode == MemoryMode::managed);
  }
  for (int streams = 1; streams <= 4; ++streams) {
    const EngineOptions options{streams, MemoryMode::pinned, true, s.arithmetic, {}};
    const std::string name = std::to_string(streams) + (streams == 1 ? " stream" : " streams");
    measure_engine_row(report, s, take(kGroupStreams, name.c_str()),
                       [&] { return make_gpu_engine(GpuPath::optimized, s.chain, options); }, false);
  }

  // CUDA graph replay of the per-frame chain, against launching it.
  {
    const AosPool out(s.out_size.rgb_bytes(), pool);
    DeviceChain chain(GpuPath::optimized, s.chain, s.arithmetic);
    device_row(kGroupGraph, "launches",
               [&](int i) { chain.run(aos_in.frame(i), s.size, out.frame(i), stream); });
    add_row(report, take(kGroupGraph, "graph replay"), [&](Row& r) {
      for (int i = 0; i < pool; ++i) chain.run(aos_in.frame(i), s.size, out.frame(i), stream);  // plan buffers now
      IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream));
      std::vector<GraphExec> graphs;
      for (int i = 0; i < pool; ++i) {
        graphs.push_back(capture_graph(stream, [&] { chain.run(aos_in.frame(i), s.size, out.frame(i), stream); }));
      }
      finish(r, s, time_stream(s, stream, [&](int first, int count) {
               for (int i = first; i < first + count; ++i) {
                 IMGPIPE_CUDA_CHECK(cudaGraphLaunch(graphs[static_cast<std::size_t>(i % pool)].get(), stream));
               }
             }));
    });
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
}

// ------------------------------------------------------------------------------------------- trace

void record_trace(const Settings& s, const std::filesystem::path& path, Report& report) {
  if (!report.device.available) {
    report.notes.push_back("--trace: no trace written; it needs a CUDA device");
    return;
  }
  const NvtxRange range("trace");
  BenchRing ring(s.slots, s.size, s.out_size);
  std::vector<DeviceChain> chains;
  for (int i = 0; i < s.slots; ++i) chains.emplace_back(GpuPath::optimized, s.chain, s.arithmetic);
  ring.set_work([&](int slot, const std::uint8_t* in, std::uint8_t* out, cudaStream_t stream) {
    chains[static_cast<std::size_t>(slot)].run(in, s.size, out, stream);
  });
  ring.fill_inputs(s.frames);
  ring.run(std::max(s.warmup, 2 * s.slots));
  const int frames = std::clamp(s.frames_per_repeat, 2 * s.slots, 64);
  std::vector<TraceSpan> spans;
  const double seconds = ring.run(frames, &spans);
  const std::string title = "imgpipe bench: optimized chain " + to_string(s.chain) + ", " + std::to_string(s.slots) +
                            " streams, pinned, " + report.device.name;
  write_trace(path, title, s.slots, spans);
  char line[256];
  std::snprintf(line, sizeof line, "trace: %d frames on %d streams (%.0f frames/s with events) in %s", frames, s.slots,
                frames / seconds, path.string().c_str());
  report.notes.push_back(line);
}

}  // namespace imgpipe::bench
