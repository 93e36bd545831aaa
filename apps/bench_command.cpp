#include "bench_command.hpp"

#include "backend.hpp"
#include "bench_frames.hpp"
#include "bench_measure.hpp"
#include "bench_report.hpp"
#include "bench_support.hpp"
#include "chain.hpp"
#include "exit_codes.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <thread>

namespace imgpipe::app {
namespace {

namespace fs = std::filesystem;

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& i : items) text += (text.empty() ? "" : ",") + i;
  return text;
}

// The command as it could be typed again.
std::string command_line(const BenchOptions& o) {
  std::string c = "imgpipe bench --ops " + o.ops;
  if (!o.size.empty()) c += " --size " + o.size;
  c += " --frames " + std::to_string(o.frames) + " --repeats " + std::to_string(o.repeats) + " --warmup " +
       std::to_string(o.warmup) + " --slots " + std::to_string(o.slots) + " --backends " + join(o.backends) +
       " --sections " + join(o.sections) + " --ceiling-mib " + std::to_string(o.ceiling_mib);
  if (!o.input.empty()) c += " --input " + o.input;
  if (!o.json.empty()) c += " --json " + o.json;
  if (!o.trace.empty()) c += " --trace " + o.trace;
  return c;
}

void require_writable_folder(const std::string& flag, const std::string& file) {
  if (file.empty()) return;
  const fs::path parent = fs::path(file).parent_path();
  if (!parent.empty() && !fs::is_directory(parent)) {
    throw UsageError(flag + " " + file + ": the folder " + parent.string() + " does not exist");
  }
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, BenchOptions& o) {
  CLI::App* c = app.add_subcommand(
      "bench", "Throughput of every backend, the kernels alone, each stage and each technique, against the copy "
               "ceilings measured in the same run");
  c->add_option("--ops", o.ops, "The op chain, e.g. \"resize=1280x720,gaussian=5:1.0\"")->required();
  c->add_option("--size", o.size, "WxH of the frames; default 1920x1080, or the first input frame's size");
  c->add_option("--frames", o.frames, "Frames per timed repeat")->check(CLI::Range(1, 1000000))->capture_default_str();
  c->add_option("--repeats", o.repeats, "Timed repeats per row; the median is reported")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  c->add_option("--warmup", o.warmup, "Frames run untimed before each row's repeats")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  c->add_option("--slots", o.slots, "Frames in flight in the optimized engine's end-to-end row")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  c->add_option("--distinct", o.distinct, "Distinct frames made or read")->check(CLI::Range(1, 64))->capture_default_str();
  c->add_option("--ceiling-mib", o.ceiling_mib, "MiB per copy when measuring the ceilings")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  CLI::Option* backends =
      c->add_option("--backends", o.backends, "End-to-end and kernel rows for: cpu, naive, optimized, npp");
  c->callback([&o, backends] { o.backends_given = backends->count() > 0; });
  backends->delimiter(',')
      ->check(CLI::IsMember({"cpu", "naive", "optimized", "npp"}))
      ->capture_default_str();
  c->add_option("--sections", o.sections, "Which rows: e2e, kernel, stage, ablation (the ceilings always run)")
      ->delimiter(',')
      ->check(CLI::IsMember({"e2e", "kernel", "stage", "ablation"}))
      ->capture_default_str();
  c->add_option("--input", o.input, "Frames from a folder of images, an image, or a video, instead of synthetic ones")
      ->check(CLI::ExistingPath);
  c->add_option("--json", o.json, "Also write every result as JSON (schema: docs/bench.md)");
  c->add_option("--trace", o.trace, "Write a Chrome trace-event file (opens in Perfetto) of the optimized ring");
  c->footer(std::string(chain_help()) + R"(

Rows: end-to-end through each backend's engine (host memory in and out), the chain on device-resident frames,
each op alone, and ablations that swap one technique with everything else held fixed. Every row gives frames
per second, GB/s (bytes that must move: input read once, output written once) and the fraction of the ceiling
that bounds it: the chain's own frames copied up and down with no kernels for end-to-end rows, the
device-to-device copy for kernel rows, a host memcpy for the cpu backend. Without a CUDA device only the cpu
rows run.)");
  return c;
}

int run_bench(const BenchOptions& o) {
  bench::Settings s;
  try {
    s.chain = parse_chain(o.ops);
  } catch (const ChainError& e) {
    throw UsageError(std::string("--ops: ") + e.what());
  }
  std::optional<Size> size;
  if (!o.size.empty()) {
    size = parse_size(o.size);
    if (!size) throw UsageError("--size " + o.size + ": expected WxH with both from 1 to " + std::to_string(kMaxDimension));
  }
  require_writable_folder("--json", o.json);
  require_writable_folder("--trace", o.trace);

  bench::Report report;
  report.version = IMGPIPE_VERSION;
  report.date = utc_now();
  report.command = command_line(o);
  report.host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  report.npp = ::imgpipe::bench::npp_compiled_in();
  for (const BackendInfo& b : available_backends()) {
    if (b.kind == BackendKind::cpu) report.cpu_backend = b.detail;
  }
  report.device = bench::describe_device();

  std::fprintf(stderr, "imgpipe bench: making or reading %d frames\n", o.distinct);
  bench::BenchFrames frames =
      bench::load_bench_frames(o.input.empty() ? std::nullopt : std::optional<fs::path>(o.input), size, o.distinct);
  s.frames = std::move(frames.frames);
  s.size = frames.size;
  s.out_size = output_size(s.chain, s.size);
  s.frames_per_repeat = o.frames;
  s.repeats = o.repeats;
  s.warmup = o.warmup;
  s.slots = o.slots;
  s.ceiling_bytes = static_cast<std::size_t>(o.ceiling_mib) << 20;
  s.backends = {o.backends.begin(), o.backends.end()};
  s.sections = {o.sections.begin(), o.sections.end()};

  bench::Parameters& p = report.parameters;
  p.ops = o.ops;
  p.chain = to_string(s.chain);
  p.size = s.size;
  p.output_size = s.out_size;
  p.frames = s.frames_per_repeat;
  p.repeats = s.repeats;
  p.warmup = s.warmup;
  p.slots = s.slots;
  p.input = frames.source;
  p.distinct_frames = static_cast<int>(s.frames.size());
  p.ceiling_bytes = static_cast<double>(s.ceiling_bytes);
  p.backends = o.backends;
  p.sections = o.sections;

  std::fprintf(stderr, "imgpipe bench: %s, %s -> %s, %s\n", p.chain.c_str(), to_string(s.size).c_str(),
               to_string(s.out_size).c_str(), p.input.c_str());
  std::vector<std::string> gpu_rows_asked;
  for (const std::string& b : o.backends) {
    if (b != "cpu") gpu_rows_asked.push_back(b);
  }
  const bool gpu_rows_missing = !report.device.available && o.backends_given && !gpu_rows_asked.empty();
  if (!report.device.available) {
    const std::string note = "GPU rows need a CUDA device; none is usable here (" + report.device.reason +
                             "), so only the cpu rows and the host ceiling ran";
    report.notes.push_back(note);
    std::fprintf(stderr, "imgpipe bench: %s\n", note.c_str());
  }

  bench::measure_host_ceiling(s, report);
  if (report.device.available) {
    bench::measure_device_ceilings(s, report);
    s.device_pool = bench::device_pool_frames(s.size);
    p.device_pool = s.device_pool;
  }
  if (s.sections.contains("e2e")) bench::measure_end_to_end(s, report);
  if (s.sections.contains("kernel") || s.sections.contains("stage")) bench::measure_kernels(s, report);
  if (s.sections.contains("ablation")) bench::measure_ablations(s, report);
  if (!o.trace.empty()) bench::record_trace(s, o.trace, report);

  if (!o.json.empty()) bench::write_json(report, o.json);
  bench::print_table(report, stdout);
  if (gpu_rows_missing) {
    std::fprintf(stderr, "imgpipe bench: --backends %s: these rows need a CUDA device and none is usable here (%s); "
                 "they did not run\n", join(gpu_rows_asked).c_str(), report.device.reason.c_str());
    return kExitRuntime;
  }
  const bool failed = std::any_of(report.rows.begin(), report.rows.end(),
                                  [](const bench::Row& r) { return r.status == "failed"; });
  return failed ? kExitSomeFailed : kExitOk;
}

}  // namespace imgpipe::app
