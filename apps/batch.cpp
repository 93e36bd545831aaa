#include "batch.hpp"

#include "backend_choice.hpp"
#include "chain.hpp"
#include "cuda_check.hpp"
#include "engine.hpp"
#include "exit_codes.hpp"
#include "folder.hpp"
#include "folders.hpp"
#include "image_file.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

namespace imgpipe::app {
namespace {

namespace fs = std::filesystem;

// One file on its way through the pipeline. It holds an engine slot from decoding until its output is
// encoded. The first failure is kept in `error`; later stages pass the task along untouched so the last
// stage reports every file, in input order.
struct Task {
  const FilePlan* plan = nullptr;
  FrameSlot* slot = nullptr;
  std::vector<std::string> warnings;
  std::string error;
};

// On a terminal, one progress line that rewrites itself; messages clear it first.
class Reporter {
 public:
  explicit Reporter(std::size_t total) : total_(total), terminal_(::isatty(STDERR_FILENO) == 1) {}

  void message(const std::string& text) {
    clear_progress();
    std::cerr << "imgpipe: " << text << "\n";
  }

  void progress(std::size_t finished, const fs::path& last) {
    if (!terminal_) return;
    std::cerr << "\r\033[K[" << finished << "/" << total_ << "] " << last.string() << std::flush;
  }

  void clear_progress() {
    if (terminal_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  std::size_t total_;
  bool terminal_;
};

int worker_count(int jobs) {
  if (jobs > 0) return jobs;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

int run_batch(const BatchOptions& options) {
  // Everything that can be wrong with the request is checked before the first file is written.
  Chain chain;
  try {
    chain = parse_chain(options.ops);
  } catch (const ChainError& e) {
    throw UsageError(std::string("--ops: ") + e.what());
  }
  if (options.format != "same" && options.format != "ppm" && !io::has_opencv_codecs()) {
    throw UsageError("--format " + options.format + " needs a build with OpenCV; this build reads and writes PPM only");
  }
  check_folders(options.input_dir, options.output_dir);
  const std::vector<FilePlan> plans =
      plan_outputs(options.input_dir, options.output_dir, options.format, options.overwrite);
  if (plans.empty()) {
    throw UsageError("no images (" + io::image_extensions_text() + ") under '" + options.input_dir.string() + "'");
  }
  const int workers = worker_count(options.jobs);
  EngineOptions engine_options;
  engine_options.slots = options.slots > 0 ? options.slots : std::min(kMaxSlots, workers + 2);
  try {
    engine_options.memory = parse_memory_mode(options.memory);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--memory: ") + e.what());
  }
  const std::unique_ptr<Engine> engine =
      make_engine(choose_backend_kind(options.backend), chain, engine_options);
  fs::create_directories(options.output_dir);

  const tbb::global_control thread_limit(tbb::global_control::max_allowed_parallelism,
                                         static_cast<std::size_t>(workers));
  // One token per engine slot: a token takes its slot while decoding and gives it back once encoded, so
  // acquire() never waits on a token that cannot move, and memory stays bounded by the slots.
  const auto max_in_flight = static_cast<std::size_t>(engine_options.slots);

  Reporter reporter(plans.size());
  std::size_t next = 0, done = 0, failed = 0;
  const auto start = std::chrono::steady_clock::now();

  auto next_file = [&](tbb::flow_control& control) -> std::unique_ptr<Task> {
    if (next == plans.size()) {
      control.stop();
      return nullptr;
    }
    auto task = std::make_unique<Task>();
    task->plan = &plans[next++];
    task->error = task->plan->refusal.empty() ? "" : task->plan->input.string() + ": not processed: " +
                                                     task->plan->refusal;
    return task;
  };
  auto release = [&](Task& task) {
    if (task.slot) engine->release(*task.slot);
    task.slot = nullptr;
  };
  // Decodes straight into the slot's input buffer (pinned on the GPU engine): no extra host copy.
  auto decode = [&](std::unique_ptr<Task> task) {
    if (!task->error.empty()) return task;
    try {
      task->warnings = io::read_image_into(task->plan->input, [&](Size size) {
        task->slot = &engine->acquire(size);
        return task->slot->input;
      });
    } catch (const std::exception& e) {
      release(*task);
      task->error = e.what();
    }
    return task;
  };
  // Submission in input order, so completions come back in input order too.
  auto submit = [&](std::unique_ptr<Task> task) {
    if (!task->error.empty()) return task;
    try {
      engine->submit(*task->slot);
    } catch (const cuda::CudaError& e) {
      if (e.sticky()) throw;  // the device is unusable for every later file too: stop the run
      release(*task);
      task->error = task->plan->input.string() + ": " + e.what();
    } catch (const std::exception& e) {
      release(*task);
      task->error = task->plan->input.string() + ": " + e.what();
    }
    return task;
  };
  auto complete = [&](std::unique_ptr<Task> task) {
    if (!task->error.empty()) return task;
    if (engine->next_completed() != task->slot) throw std::logic_error("batch: the engine completed out of order");
    return task;
  };
  // Encodes straight from the slot's output buffer, then gives the slot back.
  auto encode = [&](std::unique_ptr<Task> task) {
    if (!task->error.empty()) return task;
    try {
      std::error_code error;
      fs::create_directories(task->plan->output.parent_path(), error);
      if (error) throw io::IoError(task->plan->output.parent_path(), "cannot create the folder: " + error.message());
      io::write_image(task->plan->output, task->slot->output, options.quality);
    } catch (const std::exception& e) {
      task->error = e.what();
    }
    release(*task);
    return task;
  };
  auto report = [&](std::unique_ptr<Task> task) {
    for (const std::string& warning : task->warnings) {
      reporter.message(task->plan->input.string() + ": warning: " + warning);
    }
    if (task->error.empty()) {
      ++done;
    } else {
      ++failed;
      reporter.message(task->error);
    }
    reporter.progress(done + failed, task->plan->input);
  };

  using TaskPtr = std::unique_ptr<Task>;
  tbb::parallel_pipeline(max_in_flight,
                         tbb::make_filter<void, TaskPtr>(tbb::filter_mode::serial_in_order, next_file) &
                             tbb::make_filter<TaskPtr, TaskPtr>(tbb::filter_mode::parallel, decode) &
                             tbb::make_filter<TaskPtr, TaskPtr>(tbb::filter_mode::serial_in_order, submit) &
                             tbb::make_filter<TaskPtr, TaskPtr>(tbb::filter_mode::serial_in_order, complete) &
                             tbb::make_filter<TaskPtr, TaskPtr>(tbb::filter_mode::parallel, encode) &
                             tbb::make_filter<TaskPtr, void>(tbb::filter_mode::serial_in_order, report));

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  reporter.clear_progress();
  char summary[256];
  std::snprintf(summary, sizeof summary, "%zu done, %zu failed in %.2f s (%.1f images/s) on the %s", done, failed,
                seconds, seconds > 0 ? done / seconds : 0.0, engine->describe().c_str());
  reporter.message(std::string(summary) + "; outputs in " + options.output_dir.string());
  return failed == 0 ? kExitOk : kExitSomeFailed;
}

}  // namespace imgpipe::app
