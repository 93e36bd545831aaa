// The benchmark matrix: every op alone and the chains users run, at several frame sizes, one frame per launch
// and batched, for the naive and optimized paths (each with fast and with exact arithmetic) and NPP. Every row
// is set against its floor: the bytes it must move (the input read once, the output written once) at the
// device-to-device copy rate of the same run.
#include "bench_frames.hpp"
#include "bench_measure.hpp"
#include "bench_rows.hpp"
#include "bench_support.hpp"
#include "chain.hpp"
#include "gpu_backend.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace imgpipe::bench {
namespace {

constexpr int kDistinctFrames = 4;

// Every op alone, then the chains users run; {A} is a ratio no exact-ratio path takes.
constexpr const char* kChains[] = {
    "resize={R}", "gaussian=5:1.0", "box=5", "sharpen", "sobel", "flip=h", "transpose", "rotate=90", "gray",
    "normalize", "resize={R},gaussian=5:1.0", "gray,sobel,normalize", "resize={A},gaussian=7:2.0",
    "rotate=90,flip=h,sharpen"};

int scaled(int value, int numerator, int denominator) {
  return std::max(1, (value * numerator + denominator / 2) / denominator);
}

int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

int matrix_warmup_frames(int warmup, int batch) { return round_up(std::max(warmup, batch), batch); }

std::vector<std::string> default_matrix_chains() { return {std::begin(kChains), std::end(kChains)}; }

Chain matrix_chain_at(std::string spec, Size in) {
  const auto put = [&spec](const std::string& token, Size size) {
    for (auto at = spec.find(token); at != std::string::npos; at = spec.find(token)) {
      spec.replace(at, token.size(), to_string(size));
    }
  };
  put("{R}", {scaled(in.width, 2, 3), scaled(in.height, 2, 3)});
  put("{A}", {scaled(in.width, 1000, 1920), scaled(in.height, 700, 1080)});
  return parse_chain(spec);
}

void measure_matrix(const Settings& s, Report& report) {
  const int batch = s.matrix_batch;
  const std::string batched = "optimized x" + std::to_string(batch);
  // Whole batches only: a batched row launches `batch` consecutive frames of the pool at once.
  Settings timing = s;
  timing.frames_per_repeat = round_up(s.frames_per_repeat, batch);
  timing.warmup = matrix_warmup_frames(s.warmup, batch);
  const bool naive = s.backends.contains("naive"), optimized = s.backends.contains("optimized"),
             npp = s.backends.contains("npp");

  for (const Size size : s.matrix_sizes) {
    std::vector<Chain> chains;
    for (const std::string& spec : s.matrix_chains) chains.push_back(matrix_chain_at(spec, size));
    const auto group_of = [&](const Chain& chain) { return to_string(size) + " " + to_string(chain); };
    const auto bytes_of = [&](const Chain& chain) {
      return static_cast<double>(size.rgb_bytes() + output_size(chain, size).rgb_bytes());
    };

    if (!report.device.available) {
      for (const Chain& chain : chains) {
        for (const std::string& name :
             {std::string("naive"), std::string("optimized"), batched, std::string("naive exact"),
              std::string("optimized exact"), batched + " exact", std::string("npp")}) {
          if (s.backends.contains(name.substr(0, name.find(' ')))) {
            add_skipped(report, make_row(kMatrixSection, group_of(chain), name, "", bytes_of(chain), kDeviceCopy),
                        gpu_missing_reason(report));
          }
        }
      }
      continue;
    }

    std::fprintf(stderr, "imgpipe bench: matrix at %s\n", to_string(size).c_str());
    const cuda::Stream stream_owner = cuda::Stream::create();
    const cudaStream_t stream = stream_owner.get();
    const int pool = round_up(std::max(batch, device_pool_frames(size)), batch);
    std::vector<Image> frames;
    for (int i = 0; i < kDistinctFrames; ++i) frames.push_back(synthetic_frame(size, i));
    const AosPool in(size.rgb_bytes(), pool);
    in.upload(frames, stream);

    for (const Chain& chain : chains) {
      const std::string group = group_of(chain);
      const double bytes = bytes_of(chain);
      const Size out_size = output_size(chain, size);
      const AosPool out(out_size.rgb_bytes(), pool);
      const auto one_frame_per_launch = [&](DeviceChain& device_chain) {
        return time_stream(timing, stream, [&](int first, int count) {
          for (int i = first; i < first + count; ++i) device_chain.run(in.frame(i), size, out.frame(i), stream);
        });
      };
      // Each GPU row twice: fast arithmetic, and exact (OpenCV's bytes), whose twin is its fast row.
      for (const Arithmetic arithmetic : {Arithmetic::fast, Arithmetic::exact}) {
        const bool exact = arithmetic == Arithmetic::exact;
        const std::string suffix = exact ? " exact" : "";
        const std::string described = exact ? ", exact arithmetic" : "";
        if (naive) {
          add_row(report,
                  make_row(kMatrixSection, group, "naive" + suffix,
                           "DeviceChain naive, one frame per launch" + described, bytes, kDeviceCopy,
                           exact ? "naive" : ""),
                  [&](Row& r) {
                    DeviceChain device_chain(GpuPath::naive, chain, arithmetic);
                    finish(r, timing, one_frame_per_launch(device_chain));
                  });
        }
        if (optimized) {
          Row row = make_row(kMatrixSection, group, "optimized" + suffix,
                             "DeviceChain optimized, one frame per launch" + described, bytes, kDeviceCopy,
                             exact ? "optimized" : "naive");
          row.peer = "npp";
          add_row(report, std::move(row), [&](Row& r) {
            DeviceChain device_chain(GpuPath::optimized, chain, arithmetic);
            finish(r, timing, one_frame_per_launch(device_chain));
          });
          row = make_row(kMatrixSection, group, batched + suffix,
                         "DeviceChain optimized run_batch, " + std::to_string(batch) + " frames per call" + described,
                         bytes, kDeviceCopy, exact ? batched : "naive");
          row.peer = "npp";
          add_row(report, std::move(row), [&](Row& r) {
            DeviceChain device_chain(GpuPath::optimized, chain, arithmetic);
            finish(r, timing, time_stream(timing, stream, [&](int first, int count) {
                     for (int i = first; i < first + count; i += batch) {
                       device_chain.run_batch(in.frame(i), size, batch, out.frame(i), stream);
                     }
                   }));
          });
        }
      }
      if (npp) {
        Row row = make_row(kMatrixSection, group, "npp", "", bytes, kDeviceCopy);
        if (const auto why = NppChain::unsupported(chain)) {
          add_skipped(report, std::move(row), *why);
          continue;
        }
        add_row(report, std::move(row), [&](Row& r) {
          NppChain npp_chain(chain, size, stream);
          r.detail = npp_chain.describe() + "; one frame per call";
          finish(r, timing, time_stream(timing, stream, [&](int first, int count) {
                   for (int i = first; i < first + count; ++i) npp_chain.run(in.frame(i), out.frame(i));
                 }));
        });
      }
    }
  }
}

}  // namespace imgpipe::bench
