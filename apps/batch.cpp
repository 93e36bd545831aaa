#include "batch.hpp"

#include "backend_choice.hpp"
#include "chain.hpp"
#include "engine.hpp"
#include "exit_codes.hpp"
#include "folder.hpp"
#include "gpu_jpeg.hpp"
#include "image_file.hpp"
#include "image_folder.hpp"
#include "job.hpp"
#include "progress.hpp"
#include "signals.hpp"
#include "timings.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <memory>
#include <iostream>
#include <optional>
#include <string_view>

namespace imgpipe::app {
namespace {

namespace fs = std::filesystem;

struct Shard {
  int index = 0;
  int count = 1;
};

// "K/N" with 0 <= K < N; nullopt for an empty text.
std::optional<Shard> parse_shard(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto whole_number = [](std::string_view digits, int& value) {
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return !digits.empty() && error == std::errc() && end == digits.data() + digits.size();
  };
  const std::string_view all(text);
  const std::size_t slash = all.find('/');
  Shard shard;
  if (slash == std::string_view::npos || !whole_number(all.substr(0, slash), shard.index) ||
      !whole_number(all.substr(slash + 1), shard.count) || shard.count < 1 || shard.index < 0 ||
      shard.index >= shard.count) {
    throw UsageError("--shard '" + text + "': expected K/N with 0 <= K < N, e.g. 3/8 for the fourth of eight shards");
  }
  return shard;
}

enum class Codec { cpu, gpu };

// --decoder / --encoder: auto takes the GPU where the engine keeps frames on the device and nvJPEG runs here.
Codec choose_codec(const std::string& option, const std::string& choice, const Engine& engine) {
  try {
    return io::gpu_jpeg_chosen(choice, engine) ? Codec::gpu : Codec::cpu;
  } catch (const std::invalid_argument& e) {
    throw UsageError(option + " gpu: " + e.what());
  }
}

std::string codec_summary(const io::ImageFolderSource& source, const io::ImageFolderSink& sink, bool gpu_decoder,
                          bool gpu_encoder) {
  std::string text;
  if (gpu_decoder) {
    const auto counts = source.jpeg_decoders();
    text += "; JPEG decoded by";
    for (const io::JpegDecoder decoder : {io::JpegDecoder::hardware, io::JpegDecoder::gpu_hybrid, io::JpegDecoder::cpu}) {
      text += std::string(decoder == io::JpegDecoder::hardware ? " " : ", ") + std::string(to_string(decoder)) +
              " " + std::to_string(counts[static_cast<std::size_t>(decoder)]);
    }
  }
  if (gpu_encoder) text += "; JPEG encoded on the GPU: " + std::to_string(sink.gpu_encoded());
  return text;
}

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// When each part of the start-up ended, for --timings.
struct StartUp {
  Clock::time_point begin = Clock::now();
  Clock::time_point planned, engine_made, decoder_made, encoder_made;
};

// --timings: the start-up, the mean time an image spent in each stage of the job, and how busy the GPU codecs
// were. A stage or codec busy for most of the job bounds it.
std::vector<std::string> timing_lines(const StartUp& start_up, const JobSummary& summary, const std::string& cpu,
                                      const io::GpuJpegDecoders* decoders, const io::GpuJpegEncoders* encoders) {
  std::vector<std::string> lines;
  char text[512];
  std::snprintf(text, sizeof text,
                "timings: start-up %.2f s (listing the folder %.2f s, the engine and the CUDA context %.2f s",
                seconds_between(start_up.begin, start_up.encoder_made),
                seconds_between(start_up.begin, start_up.planned),
                seconds_between(start_up.planned, start_up.engine_made));
  std::string line = text;
  if (decoders) {
    std::snprintf(text, sizeof text, ", the GPU JPEG decoders %.2f s",
                  seconds_between(start_up.engine_made, start_up.decoder_made));
    line += text;
  }
  if (encoders) {
    std::snprintf(text, sizeof text, ", the GPU JPEG encoders %.2f s",
                  seconds_between(start_up.decoder_made, start_up.encoder_made));
    line += text;
  }
  std::snprintf(text, sizeof text, "); the job %.2f s", summary.seconds);
  lines.push_back(line + text);
  std::vector<std::string> parts = {stage_timings(summary, "image"), cpu};
  // Each device's codecs, named by their device where there are several.
  if (decoders) {
    for (const auto& decoder : decoders->all()) {
      parts.push_back(decoder_timings(*decoder, summary.seconds, decoders->all().size() > 1));
    }
  }
  if (encoders) {
    for (const auto& encoder : encoders->all()) {
      parts.push_back(encoder_timings(*encoder, summary.seconds, encoders->all().size() > 1));
    }
  }
  for (std::string& part : parts) {
    if (!part.empty()) lines.push_back(std::move(part));
  }
  return lines;
}

}  // namespace

int run_batch(const BatchOptions& options) {
  return run_batch(options, [&options](const Chain& chain, const EngineOptions& engine_options) {
    return make_engine(choose_backend_kind(options.backend), chain, engine_options);
  });
}

int run_batch(const BatchOptions& options, const EngineFactory& make_engine_for_batch) {
  // Everything that can be wrong with the request is checked before the first file is written.
  StartUp start_up;
  Chain chain;
  try {
    chain = parse_chain(options.ops);
  } catch (const ChainError& e) {
    throw UsageError(std::string("--ops: ") + e.what());
  }
  if (options.overwrite && options.skip_existing) {
    throw UsageError("--overwrite and --skip-existing contradict each other; give one");
  }
  if (options.max_pixels < 1) throw UsageError("--max-pixels must be at least 1");
  try {
    io::check_folders(options.input_dir, options.output_dir);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const io::ExistingOutputs existing = options.overwrite       ? io::ExistingOutputs::overwrite
                                       : options.skip_existing ? io::ExistingOutputs::skip
                                                               : io::ExistingOutputs::refuse;
  const std::optional<Shard> shard = parse_shard(options.shard);
  io::FolderPlan folder =
      io::plan_outputs(options.input_dir, options.output_dir, options.format, existing, options.follow_links);
  const std::size_t all_files = folder.files.size();
  if (shard) {
    io::keep_shard(folder, options.input_dir, shard->index, shard->count);
    if (folder.files.empty() && all_files > 0) {
      std::cerr << "imgpipe: shard " << options.shard << " holds none of the " << all_files
                << " images under '" << options.input_dir.string() << "'; nothing to do\n";
      return kExitOk;
    }
  }
  if (folder.files.empty()) {
    throw UsageError("no images (" + io::image_extensions_text() + ") under '" + options.input_dir.string() + "'" +
                     (folder.unsupported > 0 ? "; " + std::to_string(folder.unsupported) + " other files are not supported"
                                             : "") +
                     (folder.links_not_followed > 0 ? "; links to folders are not followed without --follow-links" : ""));
  }
  start_up.planned = Clock::now();
  int workers = job_workers(options.jobs);
  EngineOptions engine_options;
  engine_options.arithmetic = options.exact ? Arithmetic::exact : Arithmetic::fast;
  try {
    engine_options.memory = parse_memory_mode(options.memory);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--memory: ") + e.what());
  }
  try {
    engine_options.devices = parse_devices(options.devices);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--") + e.what());
  }
  const int devices = std::max<int>(1, static_cast<int>(engine_options.devices.size()));
  if (options.slots > 0 && options.slots < devices) {
    throw UsageError("--slots " + std::to_string(options.slots) + " is fewer than the " + std::to_string(devices) +
                     " devices of --devices; every device needs a slot");
  }
  // A device's ring overlaps upload, chain and download with three frames in flight.
  constexpr int kDefaultDeviceSlots = 3;
  // More frames in flight where JPEG may be decoded on the GPU (files waiting for each device's hardware decoder);
  // the engine tells below whether it is.
  const bool gpu_decoding_possible = options.decoder != "cpu" && engine_options.memory != MemoryMode::managed &&
                                     io::gpu_jpeg_unavailable().empty();
  engine_options.slots =
      options.slots > 0       ? options.slots
      : gpu_decoding_possible ? std::min(kMaxSlots, std::max(io::kGpuJpegSlots * devices, job_slots(workers)))
                              : std::min(kMaxSlots, std::max(kDefaultDeviceSlots * devices, job_slots(workers)));
  const std::unique_ptr<Engine> engine = make_engine_for_batch(chain, engine_options);
  start_up.engine_made = Clock::now();
  const Codec decoder = choose_codec("--decoder", options.decoder, *engine);
  const Codec encoder = choose_codec("--encoder", options.encoder, *engine);
  std::optional<io::GpuJpegDecoders> gpu_decoder;
  std::optional<io::GpuJpegEncoders> gpu_encoder;
  if (decoder == Codec::gpu) {
    gpu_decoder.emplace(engine_options.devices,
                        io::GpuJpegDecoder::Options{.decode_threads = options.gpu_decode_threads});
    // Threads that wait for the GPU decoder hold no core; every slot gets one, so files always wait for it.
    workers = std::max(workers, engine->slots());
  }
  start_up.decoder_made = Clock::now();
  if (encoder == Codec::gpu) {
    gpu_encoder.emplace(engine_options.devices, io::GpuJpegEncoder::Options{options.quality, options.full_chroma});
  }
  start_up.encoder_made = Clock::now();
  const bool writes_format = options.format == "same" || options.format == "ppm" ||
                             (options.format == "jpg" && gpu_encoder) || io::has_opencv_codecs();
  if (!writes_format) {
    throw UsageError("--format " + options.format + " needs a build with OpenCV" +
                     (options.format == "jpg" ? std::string(" or the GPU JPEG encoder (") +
                                                    (io::gpu_jpeg_unavailable().empty() ? "--encoder auto or gpu on the optimized backend"
                                                                                       : io::gpu_jpeg_unavailable()) +
                                                    ")"
                                              : std::string()) +
                     "; this build writes PPM only");
  }
  {
    std::error_code error;
    fs::create_directories(options.output_dir, error);
    if (error || !fs::is_directory(options.output_dir)) {
      throw UsageError("cannot create the output folder '" + options.output_dir.string() +
                       "': " + (error ? error.message() : std::string("it exists and is not a folder")));
    }
  }

  io::ImageFolderSource source(folder, chain, options.max_pixels, gpu_decoder ? &*gpu_decoder : nullptr);
  io::ImageFolderSink sink(folder, options.quality, options.overwrite ? io::Existing::replace : io::Existing::keep,
                           gpu_encoder ? &*gpu_encoder : nullptr);
  JobOptions job;
  job.workers = workers;
  job.stop_requested = [] { return stop_signal() != 0; };  // what is in flight still finishes

  Progress progress;
  std::size_t finished = 0;
  const CpuTime cpu_before = process_cpu_time();
  const JobSummary summary = run_job(source, *engine, sink, job, [&](const ItemResult& result) {
    for (const std::string& warning : result.warnings) progress.message(result.item.name + ": warning: " + warning);
    if (result.status != ItemResult::Status::done && result.status != ItemResult::Status::skipped) {
      progress.message(io::failure_message(result, kPixelLimitHint));
    }
    char counter[48];
    std::snprintf(counter, sizeof counter, "[%zu/%zu] ", ++finished, folder.files.size());
    progress.show(counter + result.item.name);
  });
  const CpuTime cpu_after = process_cpu_time();

  const std::size_t not_started = folder.files.size() - summary.items;
  char counts[256];
  std::snprintf(counts, sizeof counts, "%llu done, %llu failed", static_cast<unsigned long long>(summary.done),
                static_cast<unsigned long long>(summary.failed));
  std::string line = counts;
  if (summary.skipped > 0) line += ", " + std::to_string(summary.skipped) + " skipped (output exists)";
  if (not_started > 0) line += ", " + std::to_string(not_started) + " not started";
  char timing[192];
  std::snprintf(timing, sizeof timing, " in %.2f s (%.1f images/s)", summary.seconds,
                summary.seconds > 0 ? summary.done / summary.seconds : 0.0);
  line += timing;
  if (folder.unsupported > 0 || folder.links_not_followed > 0 || folder.unfinished_outputs > 0) {
    std::string passed_over;
    const auto add = [&passed_over](const std::string& what) {
      passed_over += (passed_over.empty() ? "" : ", ") + what;
    };
    if (folder.unsupported > 0) add(std::to_string(folder.unsupported) + " unsupported");
    if (folder.links_not_followed > 0) {
      add(std::to_string(folder.links_not_followed) + (folder.links_not_followed == 1 ? " link" : " links") +
          " not followed");
    }
    if (folder.unfinished_outputs > 0) {
      add(std::to_string(folder.unfinished_outputs) + " unfinished output" +
          (folder.unfinished_outputs == 1 ? "" : "s") + " of an interrupted run (.*.imgpipe-tmp-*)");
    }
    line += "; skipped: " + passed_over;
  }
  const std::string shard_text = shard ? "; shard " + options.shard + ": " + std::to_string(folder.files.size()) +
                                             " of " + std::to_string(all_files) + " images"
                                       : "";
  progress.message(line + "; on the " + engine->describe() +
                   codec_summary(source, sink, gpu_decoder.has_value(), gpu_encoder.has_value()) + shard_text +
                   "; outputs in " + options.output_dir.string());
  if (options.timings) {
    const io::GpuJpegDecoders* decoder_used = gpu_decoder ? &*gpu_decoder : nullptr;
    const io::GpuJpegEncoders* encoder_used = gpu_encoder ? &*gpu_encoder : nullptr;
    const std::string cpu = cpu_timings(cpu_before, cpu_after, summary.seconds);
    for (const std::string& timing_line : timing_lines(start_up, summary, cpu, decoder_used, encoder_used)) {
      progress.message(timing_line);
    }
  }

  if (!summary.device_failure.empty()) {
    progress.message("the GPU failed: " + summary.device_failure +
                     "; a sticky CUDA error leaves the device unusable for this process, so the run stopped "
                     "(outputs written before it are complete)");
    return kExitDevice;
  }
  if (const int signal = stop_signal(); signal != 0) {
    progress.message(std::string("interrupted by ") + signal_name(signal) +
                     ": no new files were started; files in flight were finished" +
                     (not_started > 0 ? "; --skip-existing resumes the batch" : ""));
    return kExitSignalBase + signal;
  }
  return summary.failed == 0 ? kExitOk : kExitSomeFailed;
}

}  // namespace imgpipe::app
