// imgpipe_bench_video: video decode rates on NVDEC, for one stream and for several at once (each stream runs on
// one NVDEC engine; the driver spreads streams over the engines). For every stream count:
//   decode               the elementary stream decoded on NVDEC and converted to RGB in device memory
//   decode + chain       the same frames through the optimized engine, outputs left on the device
//   decode + chain + D2H the same, outputs copied to host memory (what `imgpipe stream --output -` sends on)
// Each stream is its own copy of the file, decoded by its own thread; a row's rate is all streams' frames over
// the wall time of the slowest. The file is read from disk (the page cache after the first row).
#include "backends.hpp"
#include "chain.hpp"
#include "device_resources.hpp"
#include "frame_stream.hpp"
#include "gpu_video.hpp"
#include "job.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

namespace {

using namespace imgpipe;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  fs::path input;
  std::vector<int> streams{1, 7, 14};
  std::string ops = "resize=1280x720,gaussian=5:1.0";
  int slots = 4;
  std::string json;
};

enum class Work { decode, chain_on_device, chain_to_host };

const char* name_of(Work work) {
  switch (work) {
    case Work::decode: return "decode";
    case Work::chain_on_device: return "decode + chain";
    case Work::chain_to_host: return "decode + chain + D2H";
  }
  return "";
}

struct Row {
  Work work;
  int streams = 0;
  std::uint64_t frames = 0;
  double seconds = 0;
  std::string decoder;
  double frames_per_s() const { return seconds > 0 ? frames / seconds : 0; }
};

// The chain's outputs, dropped where they are: on the device, or after the engine copied them to the host.
class DiscardingSink final : public Sink {
 public:
  explicit DiscardingSink(bool on_device) : on_device_(on_device) {}
  void write(const Item&, ConstFrameView) override {}
  bool writes_from_device(const Item&) const override { return on_device_; }
  void write_from_device(const Item&, DeviceFrame) override {}

 private:
  bool on_device_;
};

// One stream's frames, decoded and handled as `work` says; returns the frames done.
std::uint64_t run_stream(const Options& o, Work work, std::string& decoder) {
  const std::unique_ptr<io::FrameReader> reader = io::open_gpu_video_reader(o.input);
  decoder = reader->decoder();
  if (work == Work::decode) {
    DeviceBuffer frame;
    DeviceStream stream = DeviceStream::create();
    std::uint64_t frames = 0;
    while (const std::optional<Size> size = reader->next_size()) {
      frame.grow(size->rgb_bytes());
      reader->read_to_device(DeviceFrame{frame.data(), *size, stream.get()});
      ++frames;
    }
    return frames;
  }
  const Chain chain = parse_chain(o.ops);
  EngineOptions engine_options;
  engine_options.slots = o.slots;
  const std::unique_ptr<Engine> engine = make_engine(BackendKind::optimized, chain, engine_options);
  io::FrameStreamSource source(*reader, o.input.string(), chain, io::kDefaultMaxPixels);
  DiscardingSink sink(work == Work::chain_on_device);
  const JobSummary summary = run_job(source, *engine, sink, JobOptions{});
  if (summary.failed > 0) {
    std::rethrow_exception(summary.first_failure->error);
  }
  return summary.done;
}

Row measure(const Options& o, Work work, int streams) {
  Row row;
  row.work = work;
  row.streams = streams;
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> frames{0};
  std::vector<std::string> failures(streams), decoders(streams);
  const Clock::time_point start = Clock::now();
  for (int s = 0; s < streams; ++s) {
    threads.emplace_back([&, s] {
      try {
        frames += run_stream(o, work, decoders[s]);
      } catch (const std::exception& e) {
        failures[s] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const std::string& failure : failures) {
    if (!failure.empty()) throw std::runtime_error(failure);
  }
  row.frames = frames;
  row.decoder = decoders.front();
  return row;
}

int run(const Options& o) {
  if (const std::string why = io::gpu_video_unavailable(); !why.empty()) {
    std::fprintf(stderr, "imgpipe_bench_video: NVDEC is unavailable: %s\n", why.c_str());
    return 1;
  }
  std::vector<Row> rows;
  std::printf("%-22s %8s %8s %10s %12s\n", "row", "streams", "frames", "seconds", "frames/s");
  for (const Work work : {Work::decode, Work::chain_on_device, Work::chain_to_host}) {
    for (const int streams : o.streams) {
      rows.push_back(measure(o, work, streams));
      const Row& r = rows.back();
      std::printf("%-22s %8d %8llu %10.3f %12.1f\n", name_of(work), streams,
                  static_cast<unsigned long long>(r.frames), r.seconds, r.frames_per_s());
      std::fflush(stdout);
    }
  }
  std::printf("decoder: %s; chain: %s\n", rows.front().decoder.c_str(), o.ops.c_str());
  if (!o.json.empty()) {
    nlohmann::json out;
    out["input"] = o.input.string();
    out["decoder"] = rows.front().decoder;
    out["ops"] = o.ops;
    out["slots"] = o.slots;
    for (const Row& r : rows) {
      out["rows"].push_back({{"row", name_of(r.work)}, {"streams", r.streams}, {"frames", r.frames},
                             {"seconds", r.seconds}, {"frames_per_s", r.frames_per_s()}});
    }
    std::ofstream(o.json) << out.dump(2) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"NVDEC decode rates, alone and through the chain, for one stream and several at once"};
  app.add_option("INPUT", o.input, "An H.264 or HEVC elementary stream (.h264, .hevc, ...)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--streams", o.streams, "Stream counts to measure, each a row")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--ops", o.ops, "The chain of the chain rows")->capture_default_str();
  app.add_option("--slots", o.slots, "Frames in flight in each stream's engine")
      ->check(CLI::Range(1, 128))
      ->capture_default_str();
  app.add_option("--json", o.json, "Also write the rows as JSON");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "imgpipe_bench_video: %s\n", e.what());
    return 1;
  }
}
