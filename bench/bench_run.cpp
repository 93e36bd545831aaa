#include "bench_run.hpp"

#include "backends.hpp"
#include "bench_frames.hpp"
#include "bench_measure.hpp"
#include "bench_report.hpp"
#include "bench_support.hpp"
#include "chain.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
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

// A word as a POSIX shell reads it back: single-quoted unless it holds only characters the shell leaves alone.
std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || (c != '\0' && std::strchr("-_./,=:+@%", c) != nullptr);
  });
  if (plain) return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// The command as it could be typed again: every option that changes what runs, with the values that ran.
// --backends only where it was given, since naming it makes missing GPU rows an error (exit 3).
std::string command_line(const Options& o) {
  std::string c = "imgpipe bench";
  const auto add = [&c](const char* flag, const std::string& value) {
    c += std::string(" ") + flag + " " + shell_word(value);
  };
  if (o.matrix) {
    c += " --matrix";
    add("--matrix-sizes", join(o.matrix_sizes));
    add("--matrix-batch", std::to_string(o.matrix_batch));
    if (!o.matrix_chains.empty()) c += " --matrix-chains";
    for (const std::string& spec : o.matrix_chains) c.append(1, ' ').append(shell_word(spec));
  } else {
    add("--ops", o.ops);
  }
  if (!o.size.empty()) add("--size", o.size);
  add("--frames", std::to_string(o.frames));
  add("--repeats", std::to_string(o.repeats));
  add("--warmup", std::to_string(o.warmup));
  if (!o.matrix) {
    add("--slots", std::to_string(o.slots));
    add("--distinct", std::to_string(o.distinct));
    add("--sections", join(o.sections));
  }
  if (o.backends_given) add("--backends", join(o.backends));
  if (o.exact) c += " --exact";
  if (!o.devices.empty()) add("--devices", o.devices);
  add("--ceiling-mib", std::to_string(o.ceiling_mib));
  if (!o.input.empty()) add("--input", o.input);
  if (!o.json.empty()) add("--json", o.json);
  if (!o.trace.empty()) add("--trace", o.trace);
  return c;
}

// Found before measuring, so that a run of many minutes does not end in a file it cannot write.
void require_writable_file(const std::string& flag, const std::string& file) {
  if (file.empty()) return;
  if (fs::is_directory(file)) throw OptionError(flag + " " + file + ": is a folder; name a file");
  const fs::path parent = fs::path(file).parent_path();
  if (!parent.empty() && !fs::is_directory(parent)) {
    throw OptionError(flag + " " + file + ": the folder " + parent.string() + " does not exist");
  }
  const fs::path folder = parent.empty() ? fs::path(".") : parent;
  if (access(folder.c_str(), W_OK | X_OK) != 0) {
    throw OptionError(flag + " " + file + ": cannot write in the folder " + folder.string() + " (" +
                      std::strerror(errno) + ")");
  }
}

BenchFrames frames_or_option_error(const Options& o, std::optional<Size> size) {
  // Frames larger than the memory would be killed by the kernel's OOM killer while being made, not refused.
  const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (size && static_cast<double>(size->rgb_bytes()) * o.distinct > memory) {
    throw OptionError("--size " + o.size + ": " + std::to_string(o.distinct) + " frames (--distinct) of " +
                      std::to_string(size->rgb_bytes() >> 20) + " MiB each are more than this machine's " +
                      std::to_string(static_cast<long long>(memory) >> 20) + " MiB of memory");
  }
  try {
    return load_bench_frames(o.input.empty() ? std::nullopt : std::optional<fs::path>(o.input), size, o.distinct);
  } catch (const std::bad_alloc&) {
    throw std::runtime_error("not enough memory for " + std::to_string(o.distinct) + " frames of " +
                             (size ? to_string(*size) : std::string("the input's size")) + " (--distinct, --size)");
  } catch (const std::exception& e) {
    if (o.input.empty()) throw;
    throw OptionError(std::string("--input: ") + e.what());
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
    if (std::find(s.matrix_sizes.begin(), s.matrix_sizes.end(), *matrix_size) != s.matrix_sizes.end()) {
      throw OptionError("--matrix-sizes: " + text + " is named twice");
    }
    s.matrix_sizes.push_back(*matrix_size);
  }
  s.matrix_chains = o.matrix_chains.empty() ? default_matrix_chains() : o.matrix_chains;
  for (auto spec = s.matrix_chains.begin(); spec != s.matrix_chains.end(); ++spec) {
    if (std::find(s.matrix_chains.begin(), spec, *spec) != spec) {
      throw OptionError("--matrix-chains: " + *spec + " is named twice");
    }
    try {
      for (const Size matrix_size : s.matrix_sizes) matrix_chain_at(*spec, matrix_size);
    } catch (const ChainError& e) {
      throw OptionError("--matrix-chains " + *spec + ": " + e.what());
    }
  }
  const bool any_gpu_backend =
      std::any_of(o.backends.begin(), o.backends.end(), [](const std::string& b) { return b != "cpu"; });
  if (o.matrix && !any_gpu_backend) {
    throw OptionError("--matrix has GPU rows only: --backends needs naive, optimized or npp");
  }
  const bool end_to_end = std::find(o.sections.begin(), o.sections.end(), "e2e") != o.sections.end();
  if (!o.matrix && !any_gpu_backend && !end_to_end) {
    throw OptionError("--backends cpu has only an end-to-end row, and --sections leaves out e2e: nothing to measure");
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
  require_writable_file("--json", o.json);
  require_writable_file("--trace", o.trace);

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
  BenchFrames frames = frames_or_option_error(o, size);
  s.frames = std::move(frames.frames);
  s.size = frames.size;
  s.out_size = output_size(s.chain, s.size);
  s.frames_per_repeat = o.frames;
  s.repeats = o.repeats;
  s.warmup = o.matrix ? matrix_warmup_frames(o.warmup, o.matrix_batch) : o.warmup;
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
    const bool cpu_row = s.sections.contains("e2e") && s.backends.contains("cpu");
    const std::string note = "GPU rows need a CUDA device; none is usable here (" + report.device.reason +
                             "), so only " + (cpu_row ? "the cpu row and " : "") + "the host ceiling ran";
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

  print_table(report, stdout);  // first, so that a failed write of the files still leaves the results
  if (!o.json.empty()) write_json(report, o.json);
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
