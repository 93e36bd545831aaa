// imgpipe_bench_kernels: throughput of the GPU paths with frames already in device memory, against the
// device-to-device copy ceiling measured in the same run. Speed lives here; ctest asserts none of it.
//
//   copy ceiling   cudaMemcpyAsync device -> device of 256 MiB, bytes read + bytes written
//   fused          resize_filter_aos (the kernel the pipeline runs): 1 frame per launch; the same launches
//                  replayed from a CUDA graph; 4 to 64 frames per launch
//   DeviceChain    naive and optimized, for the chain (and optimized run_batch, 16 frames per call) and for
//                  single ops on 1080p frames
//   NPP            nppiResize_8u_C3R_Ctx + nppiFilterGaussBorder_8u_C3R_Ctx (when built with NPP)
//
// Method (docs/performance.md): inputs are pseudo-random bytes, never zeros; frames rotate over --pool
// distinct input and output buffers (32 frames of 1080p are 199 MB in, more than the 60 MB L2); each variant
// runs once untimed, then --repeats times over --frames frames between two CUDA events; the median is
// reported, with the spread (max - min) / median of the repeats. GB/s counts the bytes that must move (each
// input byte read once, each output byte written once), so a path that moves more (unfused intermediates)
// shows as a lower fraction of the copy ceiling.
#include "bench_npp.hpp"
#include "bench_support.hpp"
#include "chain.hpp"
#include "cuda_check.hpp"
#include "cuda_resources.hpp"
#include "gpu_backend.hpp"
#include "resize_filter.cuh"

#ifdef IMGPIPE_HAVE_NPP
#include <npp.h>
#endif

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace imgpipe;
namespace gpu = imgpipe::cuda;

constexpr const char* kUsage =
    "usage: imgpipe_bench_kernels [--repeats N] [--frames N] [--pool N] [--json FILE] [--no-chain] [--no-npp]\n"
    "                             [--cases N] [--case IN:OUT[:K[:SIGMA]]]...\n"
    "  --repeats N  timed runs per variant, median reported (default 7, at least 5)\n"
    "  --frames N   frames per timed run (default 128, at least 100)\n"
    "  --pool N     distinct input/output frame buffers rotated through (default 64, a multiple of 64)\n"
    "  --json FILE  also write every result as JSON\n"
    "  --no-chain   skip the DeviceChain variants\n"
    "  --no-npp     skip NPP\n"
    "  --cases N    only the first N frame sizes of the fused chain (1: 1080p only; default 2)\n"
    "  --case IN:OUT[:K[:SIGMA]]\n"
    "               a resize from IN to OUT (WxH) then a KxK Gaussian (default 5, sigma 1.0) in place of the\n"
    "               default sizes; repeatable, e.g. --case 3840x2160:2000x1400:7:2\n";

// Frames per launch of the batched rows. The launches of a batch never wrap around the pool, so its size is a
// multiple of the largest; the largest batches show how much of a launch's time is fill and drain.
constexpr int kBatches[] = {4, 8, 16, 32, 64};
constexpr int kLargestBatch = kBatches[std::size(kBatches) - 1];

// One size of the fused chain: resize `in` -> `out`, then a ksize x ksize Gaussian of `sigma`.
struct Case {
  Size in, out;
  int ksize = 5;
  double sigma = 1.0;
};

struct Options {
  int repeats = 7;
  int frames = 128;
  int pool = kLargestBatch;
  std::string json;
  bool chain = true;
  bool npp = true;
  int cases = 2;
  std::vector<Case> chosen_cases;  // --case, in place of the first `cases` of the default ones
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "imgpipe_bench_kernels: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

Case parse_case(std::string_view text) {
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    const std::size_t colon = text.find(':', start);
    fields.push_back(text.substr(start, colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  const auto in = fields.size() >= 2 ? parse_size(fields[0]) : std::nullopt;
  const auto out = fields.size() >= 2 ? parse_size(fields[1]) : std::nullopt;
  Case c{in.value_or(Size{}), out.value_or(Size{})};
  bool ok = in && out && fields.size() <= 4;
  if (ok && fields.size() >= 3) {
    const auto [end, ec] = std::from_chars(fields[2].data(), fields[2].data() + fields[2].size(), c.ksize);
    ok = ec == std::errc{} && end == fields[2].data() + fields[2].size() && c.ksize >= 3 && c.ksize % 2 == 1;
  }
  if (ok && fields.size() == 4) {
    try {
      std::size_t used = 0;
      c.sigma = std::stod(std::string(fields[3]), &used);
      ok = used == fields[3].size() && c.sigma > 0;
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok) usage_error("--case needs IN:OUT[:K[:SIGMA]] (WxH sizes, odd K >= 3, SIGMA > 0), got '" + std::string(text) + "'");
  return c;
}

int parse_count(std::string_view flag, const char* text, int minimum) {
  int value = 0;
  const std::string_view s(text);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || value < minimum) {
    usage_error(std::string(flag) + " needs an integer >= " + std::to_string(minimum) + ", got '" + text + "'");
  }
  return value;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_error(std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--repeats") o.repeats = parse_count(arg, value(), 5);
    else if (arg == "--frames") o.frames = parse_count(arg, value(), 100);
    else if (arg == "--pool") o.pool = parse_count(arg, value(), kLargestBatch);
    else if (arg == "--json") o.json = value();
    else if (arg == "--no-chain") o.chain = false;
    else if (arg == "--no-npp") o.npp = false;
    else if (arg == "--cases") o.cases = parse_count(arg, value(), 1);
    else if (arg == "--case") o.chosen_cases.push_back(parse_case(value()));
    else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      usage_error("unknown argument '" + std::string(arg) + "'");
    }
  }
  if (o.pool % kLargestBatch != 0) {
    usage_error("--pool must be a multiple of " + std::to_string(kLargestBatch) + " (the largest batch)");
  }
  return o;
}

// ------------------------------------------------------------------------------------------- frames

// `count` packed RGB8 frames of one size, back to back.
class FramePool {
 public:
  FramePool(Size size, int count, std::uint32_t seed, cudaStream_t stream)
      : size_(size), count_(count), buffer_(size.rgb_bytes() * static_cast<std::size_t>(count)) {
    bench::fill_random(buffer_.data(), buffer_.capacity(), seed, stream);
  }
  Size size() const { return size_; }
  std::size_t frame_bytes() const { return size_.rgb_bytes(); }
  std::uint8_t* frame(int i) const { return buffer_.data() + frame_bytes() * static_cast<std::size_t>(i % count_); }
  gpu::AosView view(int i) const { return {frame(i), {size_.width, size_.height}, 3 * std::size_t(size_.width)}; }
  gpu::ConstAosView const_view(int i) const {
    return {frame(i), {size_.width, size_.height}, 3 * std::size_t(size_.width)};
  }

 private:
  Size size_;
  int count_;
  gpu::DeviceBuffer buffer_;
};

// ------------------------------------------------------------------------------------------- timing

struct Result {
  std::string group;
  std::string variant;
  double us_per_frame = 0;
  double bytes_per_frame = 0;  // that must move: input read once + output written once
  double spread = 0;           // (max - min) / median over the repeats
};

using bench::GraphExec;

class Bench {
 public:
  explicit Bench(const Options& options)
      : options_(options),
        stream_(gpu::Stream::create()),
        start_(gpu::Event::create(true)),
        stop_(gpu::Event::create(true)) {}

  cudaStream_t stream() const { return stream_.get(); }
  const Options& options() const { return options_; }
  const std::vector<Result>& results() const { return results_; }

  // `enqueue(first, count)` queues frames first .. first + count - 1 on stream(); it is called with
  // count == `frames` per timed run. One untimed run first (module load, plans, caches), then the repeats.
  void measure(const std::string& group, const std::string& variant, double bytes_per_frame, int frames,
               const std::function<void(int first, int count)>& enqueue) {
    enqueue(0, frames);
    IMGPIPE_CUDA_CHECK(cudaStreamSynchronize(stream()));
    std::vector<double> us;
    for (int r = 0; r < options_.repeats; ++r) {
      start_.record(stream());
      enqueue((r + 1) * frames, frames);
      stop_.record(stream());
      stop_.synchronize();
      us.push_back(1000.0 * gpu::Event::elapsed_ms(start_, stop_) / frames);
    }
    std::sort(us.begin(), us.end());
    const double median = us[us.size() / 2];
    results_.push_back({group, variant, median, bytes_per_frame, (us.back() - us.front()) / median});
    std::printf("  %-28s %-34s %9.2f us/frame\n", group.c_str(), variant.c_str(), median);
    std::fflush(stdout);
  }

 private:
  Options options_;
  gpu::Stream stream_;
  gpu::Event start_, stop_;
  std::vector<Result> results_;
};

// ------------------------------------------------------------------------------------------ variants

// Device-to-device copies of 256 MiB: the bandwidth ceiling every other number is compared with.
double copy_ceiling_gbs(Bench& bench) {
  constexpr std::size_t kBytes = 256ull << 20;
  constexpr int kCopies = 8;
  const gpu::DeviceBuffer src(kBytes), dst(kBytes);
  bench::fill_random(src.data(), kBytes, 1, bench.stream());
  // One "frame" per copy here: the per-frame figure is the time of one 256 MiB copy.
  bench.measure("copy ceiling", "D2D 256 MiB", 2.0 * kBytes, kCopies, [&](int, int count) {
    for (int i = 0; i < count; ++i) {
      IMGPIPE_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), kBytes, cudaMemcpyDeviceToDevice, bench.stream()));
    }
  });
  const Result& r = bench.results().back();
  return r.bytes_per_frame / (r.us_per_frame * 1e3);
}

std::vector<float> gaussian_taps(int ksize, double sigma) {
  std::vector<float> taps;
  for (double w : gaussian_weights(ksize, sigma)) taps.push_back(static_cast<float>(w));
  return taps;
}

void print_launch(Size in, Size out, int ksize) {
  const gpu::ResizeFilterLaunch l = gpu::resize_filter_launch({in.width, in.height}, {out.width, out.height}, ksize, 1);
  const gpu::ResizeFilterLaunch batch =
      gpu::resize_filter_launch({in.width, in.height}, {out.width, out.height}, ksize, 16);
  const std::string staging =
      l.exact_ratio ? "exact-ratio path (no staged rows)" : std::to_string(l.chunk_rows) + " rows staged per pass";
  std::printf("  fused %s -> %s, K=%d: grid %ux%u, %d threads, %zu B shared, %s, "
              "%d registers, %d blocks/SM (16 frames per launch: %zu B, %d blocks/SM)\n",
              to_string(in).c_str(), to_string(out).c_str(), ksize, l.grid.x, l.grid.y, l.threads, l.shared_bytes,
              staging.c_str(), l.registers, l.blocks_per_sm, batch.shared_bytes, batch.blocks_per_sm);
}

// One fused kernel, `launch(f, batch)` running frames f .. f + batch - 1 of the pools: one frame per launch, the
// same launches replayed from a CUDA graph, and kBatches frames per launch. Rows are named `name`, ...
void bench_launches(Bench& bench, const FramePool& in, const FramePool& out, const std::string& group,
                    const std::string& name, const std::function<void(int f, int batch)>& launch) {
  const double bytes = static_cast<double>(in.frame_bytes() + out.frame_bytes());
  const int frames = bench.options().frames;
  const int pool = bench.options().pool;
  bench.measure(group, name + ", 1 frame/launch", bytes, frames, [&](int first, int count) {
    for (int i = first; i < first + count; ++i) launch(i % pool, 1);
  });

  // The same launches from a graph: what is left when the CPU's launch overhead is taken out.
  const GraphExec exec = bench::capture_graph(bench.stream(), [&] {
    for (int i = 0; i < pool; ++i) launch(i, 1);
  });
  // Whole replays of the pool: --frames rounded up to a multiple of it.
  bench.measure(group, name + ", 1 frame/launch, graph", bytes, (frames + pool - 1) / pool * pool,
                [&](int, int count) {
                  for (int done = 0; done < count; done += pool) IMGPIPE_CUDA_CHECK(cudaGraphLaunch(exec.get(), bench.stream()));
                });

  for (int batch : kBatches) {
    // Whole batches that never wrap around the pool.
    bench.measure(group, name + ", " + std::to_string(batch) + " frames/launch", bytes,
                  (frames + batch - 1) / batch * batch, [&](int first, int count) {
                    for (int i = first; i < first + count; i += batch) launch(i % pool / batch * batch, batch);
                  });
  }
}

// The fused kernel the pipeline runs (resize_filter_aos).
void bench_fused(Bench& bench, const FramePool& in, const FramePool& out, const std::string& group, int ksize,
                 double sigma) {
  const gpu::ResizeFilterTaps taps(gaussian_taps(ksize, sigma));
  print_launch(in.size(), out.size(), ksize);
  bench_launches(bench, in, out, group, "fused", [&](int f, int batch) {
    gpu::resize_filter_aos_batch(in.const_view(f), in.frame_bytes(), out.view(f), out.frame_bytes(), batch, taps,
                                 gpu::BorderMode::reflect101, bench.stream());
  });
}

void bench_chain(Bench& bench, const FramePool& in, const std::string& spec, const std::string& group,
                 bool batched = false) {
  const Chain chain = parse_chain(spec);
  const Size out_size = output_size(chain, in.size());
  const FramePool out(out_size, bench.options().pool, 2, bench.stream());
  const double bytes = static_cast<double>(in.frame_bytes() + out.frame_bytes());
  for (GpuPath path : {GpuPath::naive, GpuPath::optimized}) {
    DeviceChain device_chain(path, chain);
    bench.measure(group, std::string(path == GpuPath::naive ? "naive" : "optimized") + " " + spec, bytes,
                  bench.options().frames, [&](int first, int count) {
                    for (int i = first; i < first + count; ++i)
                      device_chain.run(in.frame(i), in.size(), out.frame(i), bench.stream());
                  });
  }
  if (!batched) return;
  // DeviceChain::run_batch, 16 frames per call (whole batches inside the pool, whose size is a multiple of 16).
  constexpr int kBatch = 16;
  DeviceChain device_chain(GpuPath::optimized, chain);
  const int pool = bench.options().pool;
  bench.measure(group, "optimized run_batch 16 " + spec, bytes, (bench.options().frames + kBatch - 1) / kBatch * kBatch,
                [&](int first, int count) {
                  for (int i = first; i < first + count; i += kBatch) {
                    const int f = i % pool / kBatch * kBatch;
                    device_chain.run_batch(in.frame(f), in.size(), kBatch, out.frame(f), bench.stream());
                  }
                });
}

#ifdef IMGPIPE_HAVE_NPP
using bench::check_npp;
using bench::npp_context;

// NPP's resize into one intermediate frame (which stays in L2), then its 5x5 Gaussian with replicated
// borders (the only border nppiFilterGaussBorder supports; its 5x5 taps are NPP's own).
void bench_npp(Bench& bench, const FramePool& in, const FramePool& out, const std::string& group) {
  const NppStreamContext ctx = npp_context(bench.stream());
  const Size is = in.size(), os = out.size();
  const gpu::DeviceBuffer resized(os.rgb_bytes());
  const NppiSize src_size{is.width, is.height}, dst_size{os.width, os.height};
  const NppiRect src_roi{0, 0, is.width, is.height}, dst_roi{0, 0, os.width, os.height};
  const int src_step = 3 * is.width, dst_step = 3 * os.width;
  bench.measure(group, "NPP resize + FilterGaussBorder 5x5", static_cast<double>(in.frame_bytes() + out.frame_bytes()),
                bench.options().frames, [&](int first, int count) {
                  for (int i = first; i < first + count; ++i) {
                    check_npp(nppiResize_8u_C3R_Ctx(in.frame(i), src_step, src_size, src_roi, resized.data(),
                                                    dst_step, dst_size, dst_roi, NPPI_INTER_LINEAR, ctx),
                              "nppiResize_8u_C3R_Ctx");
                    check_npp(nppiFilterGaussBorder_8u_C3R_Ctx(resized.data(), dst_step, dst_size, NppiPoint{0, 0},
                                                               out.frame(i), dst_step, dst_size, NPP_MASK_SIZE_5_X_5,
                                                               NPP_BORDER_REPLICATE, ctx),
                              "nppiFilterGaussBorder_8u_C3R_Ctx");
                  }
                });
}
#endif

// ------------------------------------------------------------------------------------------- report

void print_table(const std::vector<Result>& results, double ceiling_gbs) {
  std::printf("\n%-28s %-34s %10s %10s %9s %7s %7s\n", "case", "variant", "us/frame", "frames/s", "GB/s", "%copy",
              "spread");
  for (const Result& r : results) {
    const double gbs = r.bytes_per_frame / (r.us_per_frame * 1e3);
    std::printf("%-28s %-34s %10.2f %10.0f %9.1f %6.1f%% %6.1f%%\n", r.group.c_str(), r.variant.c_str(),
                r.us_per_frame, 1e6 / r.us_per_frame, gbs, 100.0 * gbs / ceiling_gbs, 100.0 * r.spread);
  }
  std::printf("copy ceiling (D2D, read + write): %.1f GB/s\n", ceiling_gbs);
}

void write_json(const std::string& path, const std::string& device, const Options& o, double ceiling_gbs,
                const std::vector<Result>& results) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << "{\n  \"device\": \"" << device << "\",\n  \"repeats\": " << o.repeats << ",\n  \"frames\": " << o.frames
    << ",\n  \"pool\": " << o.pool << ",\n  \"copy_ceiling_gbs\": " << ceiling_gbs << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    const double gbs = r.bytes_per_frame / (r.us_per_frame * 1e3);
    f << "    {\"case\": \"" << r.group << "\", \"variant\": \"" << r.variant << "\", \"us_per_frame\": "
      << r.us_per_frame << ", \"frames_per_s\": " << 1e6 / r.us_per_frame << ", \"gb_per_s\": " << gbs
      << ", \"percent_of_copy\": " << 100.0 * gbs / ceiling_gbs << ", \"spread\": " << r.spread << "}"
      << (i + 1 < results.size() ? ",\n" : "\n");
  }
  f << "  ]\n}\n";
}

int run(const Options& options) {
  if (!gpu::device_available()) {
    std::fprintf(stderr, "imgpipe_bench_kernels: no CUDA device\n");
    return 1;
  }
  int device = 0;
  IMGPIPE_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  IMGPIPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("%s: %d SMs, %.0f MB L2; %d repeats x %d frames, pool of %d frames\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize / 1e6, options.repeats, options.frames, options.pool);

  Bench bench(options);
  const double ceiling = copy_ceiling_gbs(bench);

  std::vector<Case> cases = options.chosen_cases;
  if (cases.empty()) {
    const std::vector<Case> defaults = {Case{{1920, 1080}, {1280, 720}}, Case{{3840, 2160}, {1920, 1080}}};
    cases.assign(defaults.begin(), defaults.begin() + std::min<std::size_t>(options.cases, defaults.size()));
  }
  for (const Case& c : cases) {
    char gaussian[32];
    std::snprintf(gaussian, sizeof gaussian, "gaussian=%d:%g", c.ksize, c.sigma);
    const std::string group = to_string(c.in) + "->" + to_string(c.out) + " g" + std::to_string(c.ksize);
    const FramePool in(c.in, options.pool, 3, bench.stream());
    const FramePool out(c.out, options.pool, 4, bench.stream());
    bench_fused(bench, in, out, group, c.ksize, c.sigma);
#ifdef IMGPIPE_HAVE_NPP
    if (options.npp && c.ksize == 5) bench_npp(bench, in, out, group);  // NPP's 5x5 Gaussian has its own sigma
#endif
    if (options.chain) {
      bench_chain(bench, in, "resize=" + to_string(c.out) + "," + gaussian, group, true);
    }
  }
  if (options.chain) {
    const FramePool in({1920, 1080}, options.pool, 5, bench.stream());
    for (const char* op : {"resize=1280x720", "gaussian=5:1.0", "box=5", "sharpen", "sobel", "transpose", "rotate=90",
                           "flip=h", "gray", "normalize"}) {
      bench_chain(bench, in, op, "1920x1080 op");
    }
  }

  print_table(bench.results(), ceiling);
  if (!options.json.empty()) write_json(options.json, prop.name, options, ceiling, bench.results());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_options(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "imgpipe_bench_kernels: %s\n", e.what());
    return 1;
  }
}
