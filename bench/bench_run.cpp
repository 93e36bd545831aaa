#include "bench_run.hpp"

#include "backends.hpp"
#include "bench_frames.hpp"
#include "bench_measure.hpp"
#include "bench_report.hpp"
#include "bench_support.hpp"
#include "chain.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>

namespace imgpipe::bench {
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
std::string command_line(const Options& o) {
  std::string c = "imgpipe bench";
  if (o.matrix) {
    c += " --matrix --matrix-sizes " + join(o.matrix_sizes) + " --matrix-batch " + std::to_string(o.matrix_batch);
  } else {
    c += " --ops " + o.ops;
  }
  if (!o.size.empty()) c += " --size " + o.size;
  c += " --frames " + std::to_string(o.frames) + " --repeats " + std::to_string(o.repeats) + " --warmup " +
       std::to_string(o.warmup) + " --slots " + std::to_string(o.slots) + " --backends " + join(o.backends);
  if (!o.matrix) c += " --sections " + join(o.sections);
  if (o.exact) c += " --exact";
  if (!o.devices.empty()) c += " --devices " + o.devices;
  c += " --ceiling-mib " + std::to_string(o.ceiling_mib);
  if (!o.input.empty()) c += " --input " + o.input;
  if (!o.json.empty()) c += " --json " + o.json;
  if (!o.trace.empty()) c += " --trace " + o.trace;
  return c;
}

void require_writable_folder(const std::string& flag, const std::string& file) {
  if (file.empty()) return;
  const fs::path parent = fs::path(file).parent_path();
  if (!parent.empty() && !fs::is_directory(parent)) {
    throw OptionError(flag + " " + file + ": the folder " + parent.string() + " does not exist");
  }
}

}  // namespace

Outcome run(const Options& o) {
  Settings s;
  if (o.ops.empty() && !o.matrix) throw OptionError("--ops is required (or --matrix, which runs its own chains)");
  try {
    if (!o.matrix) s.chain = parse_chain(o.ops);
  } catch (const ChainError& e) {
    throw OptionError(std::string("--ops: ") + e.what());
  }
  for (const std::string& text : o.matrix_sizes) {
    const std::optional<Size> matrix_size = parse_size(text);
    if (!matrix_size) {
      throw OptionError("--matrix-sizes " + text + ": expected WxH with both from 1 to " + std::to_string(kMaxDimension));
    }
    s.matrix_sizes.push_back(*matrix_size);
  }
  s.matrix_batch = o.matrix_batch;
  s.arithmetic = o.exact ? Arithmetic::exact : Arithmetic::fast;
  std::optional<Size> size;
  if (!o.size.empty()) {
    size = parse_size(o.size);
    if (!size) throw OptionError("--size " + o.size + ": expected WxH with both from 1 to " + std::to_string(kMaxDimension));
  }
  if (!o.devices.empty()) {
    try {
      s.devices = parse_devices(o.devices);
    } catch (const std::invalid_argument& e) {
      throw OptionError(std::string("--") + e.what());
    }
  }
  require_writable_folder("--json", o.json);
  require_writable_folder("--trace", o.trace);

  Report report;
  report.version = IMGPIPE_VERSION;
  report.date = utc_now();
  report.command = command_line(o);
  report.host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  report.npp = npp_compiled_in();
  for (const BackendInfo& b : available_backends()) {
    if (b.kind == BackendKind::cpu) report.cpu_backend = b.detail;
  }
  report.device = describe_device();

  std::fprintf(stderr, "imgpipe bench: making or reading %d frames\n", o.distinct);
  BenchFrames frames =
      load_bench_frames(o.input.empty() ? std::nullopt : std::optional<fs::path>(o.input), size, o.distinct);
  s.frames = std::move(frames.frames);
  s.size = frames.size;
  s.out_size = output_size(s.chain, s.size);
  s.frames_per_repeat = o.frames;
  s.repeats = o.repeats;
  s.warmup = o.warmup;
  s.slots = o.slots;
  s.ceiling_bytes = static_cast<std::size_t>(o.ceiling_mib) << 20;
  s.backends = {o.backends.begin(), o.backends.end()};
  s.sections = o.matrix ? std::set<std::string>{kMatrixSection} : std::set<std::string>(o.sections.begin(), o.sections.end());

  Parameters& p = report.parameters;
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
  p.sections = {s.sections.begin(), s.sections.end()};
  p.exact = o.exact;
  p.devices = s.devices;

  if (o.matrix) {
    std::fprintf(stderr, "imgpipe bench: the matrix at %s; ceilings with %s frames\n", join(o.matrix_sizes).c_str(),
                 to_string(s.size).c_str());
  } else {
    std::fprintf(stderr, "imgpipe bench: %s, %s -> %s, %s\n", p.chain.c_str(), to_string(s.size).c_str(),
                 to_string(s.out_size).c_str(), p.input.c_str());
  }
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

  measure_host_ceiling(s, report);
  if (report.device.available) {
    measure_device_ceilings(s, report);
    s.device_pool = device_pool_frames(s.size);
    p.device_pool = s.device_pool;
  }
  if (s.sections.contains("e2e")) measure_end_to_end(s, report);
  if (s.sections.contains("kernel") || s.sections.contains("stage")) measure_kernels(s, report);
  if (s.sections.contains("ablation")) measure_ablations(s, report);
  if (s.sections.contains(kMatrixSection)) measure_matrix(s, report);
  if (!o.trace.empty()) record_trace(s, o.trace, report);

  if (!o.json.empty()) write_json(report, o.json);
  print_table(report, stdout);
  if (gpu_rows_missing) {
    std::fprintf(stderr, "imgpipe bench: --backends %s: these rows need a CUDA device and none is usable here (%s); "
                 "they did not run\n", join(gpu_rows_asked).c_str(), report.device.reason.c_str());
    return Outcome::gpu_rows_missing;
  }
  const bool failed =
      std::any_of(report.rows.begin(), report.rows.end(), [](const Row& r) { return r.status == "failed"; });
  return failed ? Outcome::rows_failed : Outcome::ok;
}

}  // namespace imgpipe::bench
