// imgpipe_bench_video: video decode rates on NVDEC, for one stream and for several at once (each stream runs on
// one NVDEC engine; the driver spreads streams over the engines). For every stream count:
//   NVDEC alone          the ceiling: libnvcuvid's parser and decoder with nothing else, each picture mapped
//                        and unmapped in display order (as NVIDIA's samples do before they copy it out)
//   decode               imgpipe's reader: the stream decoded on NVDEC and converted to RGB in device memory
//   decode + chain       the same frames through the optimized engine, outputs left on the device
//   decode + chain + D2H the same, outputs copied to host memory (what `imgpipe stream --output -` sends on)
// Each stream is its own copy of the file, decoded by its own thread; a row's rate is all streams' frames over
// the wall time of the slowest. The file is read from disk (the page cache after the first row).
// With --split, the imgpipe rows are also measured for one stream cut at its IDR pictures and decoded on that
// many decoders at once (io::GpuVideoSplit), against the ceiling of as many bare streams.
// Built with NVML (the CUDA toolkit's nvml.h), every row also gives the NVDEC engines' mean load while it ran.
#include "backends.hpp"
#include "chain.hpp"
#include "device_resources.hpp"
#include "frame_stream.hpp"
#include "gpu_video.hpp"
#include "job.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#define FFNV_LOG_FUNC(logctx, msg, ...)
#define FFNV_DEBUG_LOG_FUNC(logctx, msg, ...)
#include <ffnvcodec/dynlink_loader.h>

#ifdef IMGPIPE_HAVE_NVML
#include <nvml.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace {

using namespace imgpipe;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options {
  fs::path input;
  std::vector<int> streams{1, 7, 14};
  std::vector<int> split;  // decoder counts one split stream is measured with
  std::string ops = "resize=1280x720,gaussian=5:1.0";
  int slots = 4;
  std::string json;
};

enum class Work { nvdec_alone, decode, chain_on_device, chain_to_host };

const char* name_of(Work work) {
  switch (work) {
    case Work::nvdec_alone: return "NVDEC alone";
    case Work::decode: return "decode";
    case Work::chain_on_device: return "decode + chain";
    case Work::chain_to_host: return "decode + chain + D2H";
  }
  return "";
}

struct Row {
  Work work;
  int streams = 0;
  int decoders = 1;  // per stream
  std::uint64_t frames = 0;
  double seconds = 0;
  std::string decoder;
  std::optional<double> nvdec_load;  // percent, the mean over the row; nullopt without NVML
  double frames_per_s() const { return seconds > 0 ? frames / seconds : 0; }
};

#ifdef IMGPIPE_HAVE_NVML
// NVML's decoder utilisation of the current CUDA device (the percentage of its last sampling period in which
// its NVDEC engines were busy, averaged over the engines), read every 20 ms while it lives; mean() averages
// the readings.
class DecoderLoad {
 public:
  DecoderLoad() {
    char bus_id[32] = {};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess ||
        nvmlInit_v2() != NVML_SUCCESS) {
      return;
    }
    initialised_ = true;
    if (nvmlDeviceGetHandleByPciBusId_v2(bus_id, &device_) != NVML_SUCCESS) return;
    sampler_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      while (!stop_.wait_for(lock, std::chrono::milliseconds(20), [this] { return stopping_; })) {
        unsigned percent = 0, period_us = 0;
        if (nvmlDeviceGetDecoderUtilization(device_, &percent, &period_us) != NVML_SUCCESS) continue;
        sum_ += percent;
        ++samples_;
      }
    });
  }
  DecoderLoad(const DecoderLoad&) = delete;
  DecoderLoad& operator=(const DecoderLoad&) = delete;
  ~DecoderLoad() {
    finish();
    if (initialised_) nvmlShutdown();
  }

  std::optional<double> mean() {
    finish();
    return samples_ > 0 ? std::optional(sum_ / samples_) : std::nullopt;
  }

 private:
  void finish() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    stop_.notify_all();
    if (sampler_.joinable()) sampler_.join();
  }

  bool initialised_ = false;
  nvmlDevice_t device_{};
  std::thread sampler_;
  std::mutex mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  double sum_ = 0;
  int samples_ = 0;
};
#endif

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

void check(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: CUDA driver error " + std::to_string(result));
  }
}

// The ceiling: one stream through libnvcuvid alone, the way NVIDIA's decoder sample drives it (decode surfaces
// as the parser asks, display delay 2, each picture mapped on a stream and unmapped once that stream is done).
class BareDecoder {
 public:
  explicit BareDecoder(cudaVideoCodec codec) {
    if (cuvid_load_functions(&api_, nullptr) != 0) throw std::runtime_error("libnvcuvid.so.1 could not be loaded");
    check_device(cudaFree(nullptr), "cudaFree");
    stream_ = DeviceStream::create();
    CUVIDPARSERPARAMS params{};
    params.CodecType = codec;
    params.ulMaxNumDecodeSurfaces = 1;
    params.ulMaxDisplayDelay = 2;
    params.pUserData = this;
    params.pfnSequenceCallback = [](void* self, CUVIDEOFORMAT* format) {
      return static_cast<BareDecoder*>(self)->create(*format);
    };
    params.pfnDecodePicture = [](void* self, CUVIDPICPARAMS* picture) {
      auto& d = *static_cast<BareDecoder*>(self);
      return d.api_->cuvidDecodePicture(d.decoder_, picture) == CUDA_SUCCESS ? 1 : 0;
    };
    params.pfnDisplayPicture = [](void* self, CUVIDPARSERDISPINFO* shown) {
      return shown == nullptr ? 1 : static_cast<BareDecoder*>(self)->map_and_unmap(*shown);
    };
    check(api_->cuvidCreateVideoParser(&parser_, &params), "cuvidCreateVideoParser");
  }
  ~BareDecoder() {
    if (parser_ != nullptr) api_->cuvidDestroyVideoParser(parser_);
    if (decoder_ != nullptr) api_->cuvidDestroyDecoder(decoder_);
    cuvid_free_functions(&api_);
  }
  BareDecoder(const BareDecoder&) = delete;
  BareDecoder& operator=(const BareDecoder&) = delete;

  std::uint64_t decode_file(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    std::vector<char> chunk(1 << 20);
    while (file.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || file.gcount() > 0) {
      CUVIDSOURCEDATAPACKET packet{};
      packet.payload = reinterpret_cast<const unsigned char*>(chunk.data());
      packet.payload_size = static_cast<unsigned long>(file.gcount());
      check(api_->cuvidParseVideoData(parser_, &packet), "cuvidParseVideoData");
    }
    CUVIDSOURCEDATAPACKET end{};
    end.flags = CUVID_PKT_ENDOFSTREAM;
    check(api_->cuvidParseVideoData(parser_, &end), "cuvidParseVideoData");
    return frames_;
  }

 private:
  int create(const CUVIDEOFORMAT& format) {
    if (decoder_ != nullptr) return format.min_num_decode_surfaces;
    CUVIDDECODECREATEINFO info{};
    info.ulWidth = info.ulMaxWidth = format.coded_width;
    info.ulHeight = info.ulMaxHeight = format.coded_height;
    info.ulNumDecodeSurfaces = format.min_num_decode_surfaces;
    info.CodecType = format.codec;
    info.ChromaFormat = format.chroma_format;
    info.bitDepthMinus8 = format.bit_depth_luma_minus8;
    info.OutputFormat = format.bit_depth_luma_minus8 > 0 ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12;
    info.DeinterlaceMode = cudaVideoDeinterlaceMode_Weave;
    info.ulCreationFlags = cudaVideoCreate_PreferCUVID;
    info.ulNumOutputSurfaces = 2;
    info.display_area.right = static_cast<short>(format.display_area.right);
    info.display_area.bottom = static_cast<short>(format.display_area.bottom);
    info.ulTargetWidth = format.display_area.right;
    info.ulTargetHeight = format.display_area.bottom;
    return api_->cuvidCreateDecoder(&decoder_, &info) == CUDA_SUCCESS ? format.min_num_decode_surfaces : 0;
  }

  int map_and_unmap(const CUVIDPARSERDISPINFO& shown) {
    CUVIDPROCPARAMS processing{};
    processing.progressive_frame = shown.progressive_frame;
    processing.top_field_first = shown.top_field_first;
    processing.output_stream = stream_.get();
    unsigned long long surface = 0;
    unsigned pitch = 0;
    if (api_->cuvidMapVideoFrame(decoder_, shown.picture_index, &surface, &pitch, &processing) != CUDA_SUCCESS) {
      return 0;
    }
    stream_.synchronize();
    api_->cuvidUnmapVideoFrame(decoder_, surface);
    ++frames_;
    return 1;
  }

  CuvidFunctions* api_ = nullptr;
  CUvideoparser parser_ = nullptr;
  CUvideodecoder decoder_ = nullptr;
  DeviceStream stream_;
  std::uint64_t frames_ = 0;
};

// One stream's frames, decoded and handled as `work` says; returns the frames done.
std::uint64_t run_stream(const Options& o, Work work, int decoders, std::string& decoder) {
  if (work == Work::nvdec_alone) {
    const bool hevc = io::elementary_stream_codec(o.input) == io::VideoCodec::hevc;
    return BareDecoder(hevc ? cudaVideoCodec_HEVC : cudaVideoCodec_H264).decode_file(o.input);
  }
  io::GpuVideoSplit split;
  split.decoders = decoders;
  const std::unique_ptr<io::FrameReader> reader = io::open_gpu_video_reader(o.input, split);
  struct Described {  // once the stream is read: a split reader names its chunks then
    const io::FrameReader& reader;
    std::string& decoder;
    ~Described() { decoder = reader.decoder(); }
  } described{*reader, decoder};
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

Row measure(const Options& o, Work work, int streams, int decoders) {
  Row row;
  row.work = work;
  row.streams = streams;
  row.decoders = decoders;
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> frames{0};
  std::vector<std::string> failures(streams), descriptions(streams);
#ifdef IMGPIPE_HAVE_NVML
  DecoderLoad load;
#endif
  const Clock::time_point start = Clock::now();
  for (int s = 0; s < streams; ++s) {
    threads.emplace_back([&, s] {
      try {
        frames += run_stream(o, work, decoders, descriptions[s]);
      } catch (const std::exception& e) {
        failures[s] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
#ifdef IMGPIPE_HAVE_NVML
  row.nvdec_load = load.mean();
#endif
  for (const std::string& failure : failures) {
    if (!failure.empty()) throw std::runtime_error(failure);
  }
  row.frames = frames;
  row.decoder = descriptions.front();  // empty for the ceiling
  return row;
}

int run(const Options& o) {
  if (const std::string why = io::gpu_video_unavailable(); !why.empty()) {
    std::fprintf(stderr, "imgpipe_bench_video: NVDEC is unavailable: %s\n", why.c_str());
    return 1;
  }
  std::vector<Row> rows;
  std::printf("%-22s %8s %9s %8s %10s %12s %10s\n", "row", "streams", "decoders", "frames", "seconds", "frames/s",
              "NVDEC %");
  auto add = [&](Work work, int streams, int decoders) {
    rows.push_back(measure(o, work, streams, decoders));
    const Row& r = rows.back();
    char load[16] = "-";
    if (r.nvdec_load) std::snprintf(load, sizeof load, "%.0f", *r.nvdec_load);
    std::printf("%-22s %8d %9d %8llu %10.3f %12.1f %10s\n", name_of(work), streams, r.streams * decoders,
                static_cast<unsigned long long>(r.frames), r.seconds, r.frames_per_s(), load);
    std::fflush(stdout);
  };
  std::vector<int> ceilings = o.streams;  // the split rows' ceiling: as many bare streams as decoders
  for (const int decoders : o.split) {
    if (std::ranges::find(ceilings, decoders) == ceilings.end()) ceilings.push_back(decoders);
  }
  for (const int streams : ceilings) add(Work::nvdec_alone, streams, 1);
  for (const Work work : {Work::decode, Work::chain_on_device, Work::chain_to_host}) {
    for (const int streams : o.streams) add(work, streams, 1);
    for (const int decoders : o.split) add(work, 1, decoders);
  }
  std::printf("decoder: %s; chain: %s\n", rows[rows.size() - 1 - o.split.size()].decoder.c_str(), o.ops.c_str());
  for (std::size_t i = rows.size() - o.split.size(); i < rows.size(); ++i) {
    std::printf("split over %d: %s\n", rows[i].decoders, rows[i].decoder.c_str());
  }
  if (!o.json.empty()) {
    nlohmann::json out;
    out["input"] = o.input.string();
    out["decoder"] = rows.back().decoder;
    out["ops"] = o.ops;
    out["slots"] = o.slots;
    for (const Row& r : rows) {
      out["rows"].push_back({{"row", name_of(r.work)}, {"streams", r.streams}, {"decoders_per_stream", r.decoders},
                             {"frames", r.frames}, {"seconds", r.seconds}, {"frames_per_s", r.frames_per_s()},
                             {"decoder", r.decoder},
                             {"nvdec_load_percent", r.nvdec_load ? nlohmann::json(*r.nvdec_load) : nlohmann::json()}});
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
  app.add_option("--streams", o.streams, "Stream counts to measure, each a row (e.g. 1,7,14)")
      ->delimiter(',')
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--split", o.split,
                 "Also measure one stream cut at its IDR pictures over each of these decoder counts (e.g. 7)")
      ->delimiter(',')
      ->check(CLI::Range(2, 64));
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
