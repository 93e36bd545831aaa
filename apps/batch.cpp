#include "batch.hpp"

#include "backend_choice.hpp"
#include "chain.hpp"
#include "cuda_check.hpp"
#include "engine.hpp"
#include "exit_codes.hpp"
#include "folder.hpp"
#include "folders.hpp"
#include "image_file.hpp"
#include "signals.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <new>
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
  Size size;  // the input's, once its header was read
  std::vector<std::string> warnings;
  std::string error;
  bool skipped = false;
};

// The first sticky CUDA error, seen from any stage: once set, nothing more is read or submitted.
class DeviceFailure {
 public:
  bool failed() const { return failed_.load(); }
  void record(const std::string& what) {
    std::lock_guard lock(mutex_);
    if (!failed_.load()) what_ = what;
    failed_.store(true);
  }
  std::string what() const {
    std::lock_guard lock(mutex_);
    return what_;
  }

 private:
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;
  std::string what_;
};

// The largest frame the chain makes from an input of `in` (the input itself, then every op's output), so a
// chain that blows a small image up past the pixel limit is refused before the engine allocates for it.
Size largest_frame(const Chain& chain, Size in) {
  Size largest = in, size = in;
  for (const Op& op : chain.ops) {
    size = output_size(op, size);
    if (size.pixels() > largest.pixels()) largest = size;
  }
  return largest;
}

constexpr const char* kLimitHint = "; --max-pixels or IMGPIPE_MAX_PIXELS raises the limit";

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
  return run_batch(options, [&options](const Chain& chain, const EngineOptions& engine_options) {
    return make_engine(choose_backend_kind(options.backend), chain, engine_options);
  });
}

int run_batch(const BatchOptions& options, const EngineFactory& make_engine_for_batch) {
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
  if (options.overwrite && options.skip_existing) {
    throw UsageError("--overwrite and --skip-existing contradict each other; give one");
  }
  if (options.max_pixels < 1) throw UsageError("--max-pixels must be at least 1");
  check_folders(options.input_dir, options.output_dir);
  const ExistingOutputs existing = options.overwrite       ? ExistingOutputs::overwrite
                                   : options.skip_existing ? ExistingOutputs::skip
                                                           : ExistingOutputs::refuse;
  const BatchPlan batch =
      plan_outputs(options.input_dir, options.output_dir, options.format, existing, options.follow_links);
  const std::vector<FilePlan>& plans = batch.files;
  if (plans.empty()) {
    throw UsageError("no images (" + io::image_extensions_text() + ") under '" + options.input_dir.string() + "'" +
                     (batch.unsupported > 0 ? "; " + std::to_string(batch.unsupported) + " other files are not supported"
                                            : "") +
                     (batch.links_not_followed > 0 ? "; links to folders are not followed without --follow-links" : ""));
  }
  const int workers = worker_count(options.jobs);
  EngineOptions engine_options;
  engine_options.slots = options.slots > 0 ? options.slots : std::min(kMaxSlots, workers + 2);
  try {
    engine_options.memory = parse_memory_mode(options.memory);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--memory: ") + e.what());
  }
  const std::unique_ptr<Engine> engine = make_engine_for_batch(chain, engine_options);
  {
    std::error_code error;
    fs::create_directories(options.output_dir, error);
    if (error || !fs::is_directory(options.output_dir)) {
      throw UsageError("cannot create the output folder '" + options.output_dir.string() +
                       "': " + (error ? error.message() : std::string("it exists and is not a folder")));
    }
  }

  const tbb::global_control thread_limit(tbb::global_control::max_allowed_parallelism,
                                         static_cast<std::size_t>(workers));
  // One token per engine slot: a token takes its slot while decoding and gives it back once encoded, so
  // acquire() never waits on a token that cannot move, and memory stays bounded by the slots.
  const auto max_in_flight = static_cast<std::size_t>(engine_options.slots);
  const io::Existing write_mode = options.overwrite ? io::Existing::replace : io::Existing::keep;

  Reporter reporter(plans.size());
  std::size_t next = 0, done = 0, failed = 0, skipped = 0;
  DeviceFailure device;
  const std::string device_gone = "not processed: the GPU failed on an earlier file";
  const auto start = std::chrono::steady_clock::now();

  // Stops at the end, after SIGINT/SIGTERM (what is in flight still finishes) and once the GPU is gone.
  auto next_file = [&](tbb::flow_control& control) -> std::unique_ptr<Task> {
    if (next == plans.size() || stop_signal() != 0 || device.failed()) {
      control.stop();
      return nullptr;
    }
    auto task = std::make_unique<Task>();
    task->plan = &plans[next++];
    task->skipped = task->plan->skip;
    task->error = task->plan->refusal.empty() ? "" : task->plan->input.string() + ": not processed: " +
                                                     task->plan->refusal;
    return task;
  };
  auto release = [&](Task& task) {
    if (task.slot) engine->release(*task.slot);
    task.slot = nullptr;
  };
  auto busy = [](const Task& task) { return !task.error.empty() || task.skipped; };
  // One failure of this file, in words that name it; a sticky CUDA error also stops the run.
  auto fail = [&](Task& task, const std::exception_ptr& failure) {
    release(task);
    const std::string input = task.plan->input.string();
    try {
      std::rethrow_exception(failure);
    } catch (const io::PixelLimitError& e) {
      task.error = std::string(e.what()) + kLimitHint;
    } catch (const io::IoError& e) {
      task.error = e.path().empty() ? input + ": " + e.what() : e.what();
    } catch (const cuda::CudaBadAlloc& e) {
      task.error = input + ": not enough GPU memory for this " + to_string(task.size) + " image (" + e.what() +
                   "); skipped, the batch goes on";
    } catch (const cuda::CudaError& e) {
      if (e.sticky()) device.record(e.what());
      task.error = input + ": " + e.what();
    } catch (const std::bad_alloc&) {
      task.error = input + ": not enough host memory for this " + to_string(task.size) + " image";
    } catch (const std::exception& e) {
      task.error = input + ": " + e.what();
    }
  };
  // Decodes straight into the slot's input buffer (pinned on the GPU engine): no extra host copy. The slot
  // is taken only once the header passed the pixel limit, for the input and every frame the chain makes.
  auto decode = [&](std::unique_ptr<Task> task) {
    if (busy(*task)) return task;
    if (device.failed()) {
      task->error = task->plan->input.string() + ": " + device_gone;
      return task;
    }
    try {
      task->warnings = io::read_image_into(
          task->plan->input,
          [&](Size size) {
            task->size = size;
            const Size largest = largest_frame(chain, size);
            if (largest.pixels() > options.max_pixels) {
              throw io::PixelLimitError("the chain makes a " + to_string(largest) + " frame (" +
                                        std::to_string(largest.pixels()) + " pixels) from this " + to_string(size) +
                                        " image, more than the limit of " + std::to_string(options.max_pixels) +
                                        " pixels");
            }
            task->slot = &engine->acquire(size);
            return task->slot->input;
          },
          options.max_pixels);
    } catch (...) {
      fail(*task, std::current_exception());
    }
    return task;
  };
  // Submission in input order, so completions come back in input order too.
  auto submit = [&](std::unique_ptr<Task> task) {
    if (busy(*task)) return task;
    if (device.failed()) {
      release(*task);
      task->error = task->plan->input.string() + ": " + device_gone;
      return task;
    }
    try {
      engine->submit(*task->slot);
    } catch (...) {
      fail(*task, std::current_exception());
    }
    return task;
  };
  auto complete = [&](std::unique_ptr<Task> task) {
    if (busy(*task)) return task;
    const bool gone_before = device.failed();
    try {
      if (engine->next_completed() != task->slot) throw std::logic_error("batch: the engine completed out of order");
    } catch (...) {
      fail(*task, std::current_exception());
      return task;
    }
    if (gone_before) {  // its output cannot be trusted once the context is broken
      release(*task);
      task->error = task->plan->input.string() + ": " + device_gone;
    }
    return task;
  };
  // Encodes straight from the slot's output buffer, then gives the slot back. Files already here when a
  // signal arrives are still written: a signal stops the reading, not the finishing.
  auto encode = [&](std::unique_ptr<Task> task) {
    if (busy(*task)) {
      release(*task);
      return task;
    }
    try {
      std::error_code error;
      fs::create_directories(task->plan->output.parent_path(), error);
      if (error) throw io::IoError(task->plan->output.parent_path(), "cannot create the folder: " + error.message());
      io::write_image(task->plan->output, task->slot->output, options.quality, write_mode);
    } catch (...) {
      fail(*task, std::current_exception());
    }
    release(*task);
    return task;
  };
  auto report = [&](std::unique_ptr<Task> task) {
    for (const std::string& warning : task->warnings) {
      reporter.message(task->plan->input.string() + ": warning: " + warning);
    }
    if (task->skipped) {
      ++skipped;
    } else if (task->error.empty()) {
      ++done;
    } else {
      ++failed;
      reporter.message(task->error);
    }
    reporter.progress(done + failed + skipped, task->plan->input);
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
  const std::size_t not_started = plans.size() - done - failed - skipped;
  char counts[256];
  std::snprintf(counts, sizeof counts, "%zu done, %zu failed", done, failed);
  std::string summary = counts;
  if (skipped > 0) summary += ", " + std::to_string(skipped) + " skipped (output exists)";
  if (not_started > 0) summary += ", " + std::to_string(not_started) + " not started";
  if (batch.unsupported > 0 || batch.links_not_followed > 0) {
    std::string passed_over;
    if (batch.unsupported > 0) passed_over += std::to_string(batch.unsupported) + " unsupported";
    if (batch.links_not_followed > 0) {
      passed_over += std::string(passed_over.empty() ? "" : ", ") + std::to_string(batch.links_not_followed) +
                     (batch.links_not_followed == 1 ? " link" : " links") + " not followed";
    }
    summary += "; skipped: " + passed_over;
  }
  char timing[192];
  std::snprintf(timing, sizeof timing, " in %.2f s (%.1f images/s) on the %s", seconds,
                seconds > 0 ? done / seconds : 0.0, engine->describe().c_str());
  reporter.message(summary + timing + "; outputs in " + options.output_dir.string());

  if (device.failed()) {
    reporter.message("the GPU failed: " + device.what() +
                     "; a sticky CUDA error leaves the device unusable for this process, so the run stopped "
                     "(outputs written before it are complete)");
    return kExitDevice;
  }
  if (const int signal = stop_signal(); signal != 0) {
    reporter.message(std::string("interrupted by ") + signal_name(signal) +
                     ": no new files were started; files in flight were finished" +
                     (not_started > 0 ? "; --skip-existing resumes the batch" : ""));
    return kExitSignalBase + signal;
  }
  return failed == 0 ? kExitOk : kExitSomeFailed;
}

}  // namespace imgpipe::app
