#include "job.hpp"

#include "device_error.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <map>
#include <mutex>
#include <semaphore>
#include <stdexcept>
#include <thread>
#include <vector>

namespace imgpipe {
namespace {

// Lets items through a stage one at a time, in ticket order. A turn is passed on when its holder leaves
// scope, also by an exception, so a failing item never blocks the ones behind it. The tickets in flight
// span fewer than `window` numbers (one per engine slot), so each waits on a condition of its own and a
// passed turn wakes only the thread whose turn it is, not every waiting thread.
class InOrder {
 public:
  class Turn {
   public:
    explicit Turn(InOrder& stage) : stage_(stage) {}
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    ~Turn() { stage_.pass(); }

   private:
    InOrder& stage_;
  };

  // Yield for a while before sleeping: a turn usually comes within the time one frame takes, and waking a
  // sleeping thread costs tens of microseconds, which a synchronous engine (cpu, naive) would pay on every
  // frame. Yielding leaves the core to decoders and encoders that need it, as long as the waiting threads do
  // not outnumber the cores; a job with more threads than that (a GPU JPEG decoder batching many files) sleeps
  // at once, or the yielding threads would take the cores from the work.
  InOrder(std::chrono::microseconds yield_for, int window) : yield_for_(yield_for), turned_(window) {}

  [[nodiscard]] Turn wait(std::uint64_t ticket) {
    const auto give_up = std::chrono::steady_clock::now() + yield_for_;
    while (next_.load(std::memory_order_acquire) != ticket && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    std::unique_lock lock(mutex_);
    turned_[ticket % turned_.size()].wait(lock, [&] { return next_.load(std::memory_order_relaxed) == ticket; });
    return Turn(*this);
  }

 private:
  void pass() {
    std::uint64_t next = 0;
    {
      std::lock_guard lock(mutex_);
      next = next_.fetch_add(1, std::memory_order_release) + 1;
    }
    turned_[next % turned_.size()].notify_all();
  }

  std::chrono::microseconds yield_for_;
  std::mutex mutex_;
  std::vector<std::condition_variable> turned_;  // ticket t waits on turned_[t % window]
  std::atomic<std::uint64_t> next_ = 0;
};

constexpr std::chrono::microseconds kYieldFor{2000};

std::chrono::microseconds yield_window(int threads) {
  return threads <= static_cast<int>(std::thread::hardware_concurrency()) ? kYieldFor : std::chrono::microseconds{0};
}

using Status = ItemResult::Status;

// The calling thread's CPU time so far, in nanoseconds.
std::int64_t thread_cpu_ns() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// One stage's totals over the items: the time they spent in it, and the part of it their threads ran on a core.
struct StageTotal {
  std::atomic<std::int64_t> elapsed_ns = 0;
  std::atomic<std::int64_t> cpu_ns = 0;
};

// Adds the time from its construction to its destruction to a stage's total, and the thread's CPU time.
class StageTimer {
 public:
  explicit StageTimer(StageTotal& total)
      : total_(total), start_(std::chrono::steady_clock::now()), cpu_start_ns_(thread_cpu_ns()) {}
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  ~StageTimer() {
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    total_.elapsed_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count(),
                                std::memory_order_relaxed);
    total_.cpu_ns.fetch_add(thread_cpu_ns() - cpu_start_ns_, std::memory_order_relaxed);
  }

 private:
  StageTotal& total_;
  std::chrono::steady_clock::time_point start_;
  std::int64_t cpu_start_ns_;
};

double seconds_of(const std::atomic<std::int64_t>& nanoseconds) { return nanoseconds.load() * 1e-9; }

// One item on its way through, with the engine slot it holds from its read until its write.
struct InFlight {
  std::uint64_t ticket = 0;
  ItemResult result;
  FrameSlot* slot = nullptr;
  bool pending() const { return result.status == Status::done; }  // nothing has stopped it yet
};

class JobRun {
 public:
  JobRun(Source& source, Engine& engine, Sink& sink, const JobOptions& options,
         const std::function<void(const ItemResult&)>& on_result)
      : source_(source),
        engine_(engine),
        sink_(sink),
        options_(options),
        on_result_(on_result),
        in_order_(!sink.concurrent_writes()),
        tokens_(engine.slots()),
        cpu_work_(std::clamp(options.workers, 1, engine.slots())),
        submitting_(yield_window(engine.slots()), engine.slots()),
        completing_(yield_window(engine.slots()), engine.slots()),
        writing_(yield_window(engine.slots()), engine.slots()) {}

  JobSummary run() {
    const auto start = std::chrono::steady_clock::now();
    {
      // One thread per token: an item waiting for its turn (or for the GPU) holds a thread, not a core.
      std::vector<std::jthread> workers;
      for (int i = 0; i < engine_.slots(); ++i) workers.emplace_back([this] { work(); });
    }
    summary_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    summary_.stages = {seconds_of(read_.elapsed_ns), seconds_of(submit_.elapsed_ns), seconds_of(complete_.elapsed_ns),
                       seconds_of(write_.elapsed_ns)};
    summary_.stages_on_cpu = {seconds_of(read_.cpu_ns), seconds_of(submit_.cpu_ns), seconds_of(complete_.cpu_ns),
                              seconds_of(write_.cpu_ns)};
    if (unexpected_) std::rethrow_exception(unexpected_);
    return summary_;
  }

 private:
  void work() {
    while (true) {
      tokens_.acquire();
      std::optional<InFlight> item = admit();
      if (!item) {
        tokens_.release();
        return;
      }
      if (source_.concurrent_reads()) {
        const StageTimer timer(read_);
        cpu_work_.acquire();
        read(*item);
        cpu_work_.release();
      }
      submit(*item);
      complete(*item);
      write(*item);
      report(*item);
      tokens_.release();
    }
  }

  // The next item from the source, with its ticket; a serial source's item is read here too, so items are
  // read one after another. nullopt once the job is ending. Waits while kMaxUnreported items are unreported.
  std::optional<InFlight> admit() {
    std::lock_guard lock(admission_);
    {
      std::unique_lock reporting(reporting_);
      report_room_.wait(reporting, [&] {
        return stopping_ || next_ticket_ - next_report_ < static_cast<std::uint64_t>(kMaxUnreported);
      });
    }
    if (stopping_) return std::nullopt;
    if (options_.stop_requested && options_.stop_requested()) {
      summary_.stopped = true;
      stopping_ = true;
      return std::nullopt;
    }
    InFlight item;
    item.ticket = next_ticket_;
    try {
      std::optional<Item> next = source_.next();
      if (!next) {
        stopping_ = true;
        return std::nullopt;
      }
      item.result.item = std::move(*next);
    } catch (...) {
      item.result.item.index = next_ticket_;
      fail(item, Stage::read, std::current_exception());
      stopping_ = true;
    }
    ++next_ticket_;
    if (item.pending()) {
      if (item.result.item.skip) {
        item.result.status = Status::skipped;
      } else if (!item.result.item.refusal.empty()) {
        item.result.status = Status::refused;
      }
    }
    if (!source_.concurrent_reads()) {
      const StageTimer timer(read_);
      read(item);
    }
    return item;
  }

  void read(InFlight& item) {
    if (!item.pending()) return;
    if (device_failed_) {
      item.result.status = Status::abandoned;
      return;
    }
    try {
      if (!engine_.device_frames()) {
        item.result.warnings = source_.read(item.result.item, [&](Size size) {
          item.result.size = size;
          item.slot = &engine_.acquire(size);
          return item.slot->input;
        });
        return;
      }
      // The slot first, so that the source knows its device before it reads (a GPU decoder per device).
      const Residence output_at = sink_.writes_from_device(item.result.item) ? Residence::device : Residence::host;
      item.slot = &engine_.take();
      FrameSlot& slot = *item.slot;
      item.result.warnings = source_.read_on_device(
          item.result.item,
          [&](Size size) {
            item.result.size = size;
            engine_.fit(slot, size, {Residence::host, output_at});
            return slot.input;
          },
          [&](Size size) {
            item.result.size = size;
            engine_.fit(slot, size, {Residence::device, output_at});
            return slot.device_input;
          },
          slot.device);
    } catch (...) {
      fail(item, Stage::read, std::current_exception());
    }
  }

  // For a sink that writes in item order, submission and completion go in ticket order too, so that frames
  // come out of the engine in the order the sink takes them. Otherwise each item is submitted as soon as it is
  // read and taken back as soon as its frame is done, so a slow read or frame holds up no other item.
  void submit(InFlight& item) {
    const StageTimer timer(submit_);
    if (in_order_) {
      const InOrder::Turn turn = submitting_.wait(item.ticket);
      submit_now(item);
    } else {
      std::lock_guard lock(submission_);
      submit_now(item);
    }
  }

  void submit_now(InFlight& item) {
    if (!item.pending()) return;
    if (device_failed_) {
      abandon(item);
      return;
    }
    try {
      engine_.submit(*item.slot);
    } catch (...) {
      fail(item, Stage::process, std::current_exception());
    }
  }

  void complete(InFlight& item) {
    const StageTimer timer(complete_);
    if (in_order_) {
      const InOrder::Turn turn = completing_.wait(item.ticket);
      complete_now(item);
    } else {
      complete_now(item);
    }
  }

  void complete_now(InFlight& item) {
    if (!item.pending()) return;
    const bool device_failed_before = device_failed_;
    try {
      if (!in_order_) {
        engine_.wait_until_done(*item.slot);
      } else if (engine_.next_completed() != item.slot) {
        throw std::logic_error("job: the engine completed out of order");
      }
    } catch (...) {
      fail(item, Stage::process, std::current_exception());
      return;
    }
    if (device_failed_before) abandon(item);  // its output cannot be trusted once the context is broken
  }

  // Straight from the slot's output buffer; then the slot goes back to the engine. Items already past
  // admission when a stop was requested are still written: a stop ends the reading, not the finishing.
  void write(InFlight& item) {
    const StageTimer timer(write_);
    if (sink_.concurrent_writes()) {
      if (!item.pending()) return;
      cpu_work_.acquire();
      write_now(item);
      cpu_work_.release();
      return;
    }
    const InOrder::Turn turn = writing_.wait(item.ticket);  // taken by every ticket, written or not
    if (item.pending()) write_now(item);
  }

  void write_now(InFlight& item) {
    try {
      if (item.slot->placement.output == Residence::device) {
        sink_.write_from_device(item.result.item, item.slot->device_output);
      } else {
        sink_.write(item.result.item, item.slot->output);
      }
    } catch (...) {
      fail(item, Stage::write, std::current_exception());
      return;
    }
    release(item);
  }

  // In ticket order, without keeping the item's thread: a finished item leaves its result here, and the thread
  // whose item completes a run of consecutive tickets reports that run.
  void report(InFlight& item) {
    std::lock_guard lock(reporting_);
    unreported_.emplace(item.ticket, std::move(item.result));
    while (!unreported_.empty() && unreported_.begin()->first == next_report_) {
      report_now(unreported_.begin()->second);
      unreported_.erase(unreported_.begin());
      ++next_report_;
    }
    report_room_.notify_all();
  }

  void report_now(const ItemResult& result) {
    ++summary_.items;
    switch (result.status) {
      case Status::done: ++summary_.done; break;
      case Status::skipped: ++summary_.skipped; break;
      case Status::refused:
      case Status::failed:
      case Status::abandoned:
        ++summary_.failed;
        if (!summary_.first_failure) summary_.first_failure = result;
        break;
    }
    if (!on_result_) return;
    try {
      on_result_(result);
    } catch (...) {  // the caller's failure ends the job; run() rethrows it once every item is accounted for
      if (!unexpected_) unexpected_ = std::current_exception();
      stopping_ = true;
    }
  }

  void release(InFlight& item) {
    if (item.slot) engine_.release(*item.slot);
    item.slot = nullptr;
  }

  void abandon(InFlight& item) {
    release(item);
    item.result.status = Status::abandoned;
  }

  void fail(InFlight& item, Stage stage, std::exception_ptr error) {
    release(item);
    item.result.status = Status::failed;
    item.result.stage = stage;
    item.result.error = error;
    try {
      std::rethrow_exception(error);
    } catch (const DeviceError& e) {
      if (e.sticky()) {
        std::lock_guard lock(device_mutex_);
        if (!device_failed_) summary_.device_failure = e.what();
        device_failed_ = true;
        stopping_ = true;
      }
    } catch (...) {
    }
    if (options_.stop_at_first_failure) stopping_ = true;
  }

  Source& source_;
  Engine& engine_;
  Sink& sink_;
  const JobOptions& options_;
  const std::function<void(const ItemResult&)>& on_result_;

  const bool in_order_;                          // the sink writes in item order
  std::counting_semaphore<kMaxSlots> tokens_;    // items in flight, at most one per engine slot
  std::counting_semaphore<kMaxSlots> cpu_work_;  // concurrent reads and writes, at most options.workers
  std::mutex admission_;                         // next(), and a serial source's read()
  std::mutex submission_;                        // one submit at a time, where tickets need not take turns
  std::uint64_t next_ticket_ = 0;
  std::atomic<bool> stopping_ = false;
  std::atomic<bool> device_failed_ = false;
  std::mutex device_mutex_;
  InOrder submitting_, completing_, writing_;
  StageTotal read_, submit_, complete_, write_;
  std::mutex reporting_;                            // unreported_, next_report_, summary_'s counts and unexpected_
  std::condition_variable report_room_;             // a report made room under kMaxUnreported
  std::map<std::uint64_t, ItemResult> unreported_;  // finished items behind an unreported one, by ticket
  std::uint64_t next_report_ = 0;
  JobSummary summary_;  // counted in report_now(), in ticket order
  std::exception_ptr unexpected_;
};

}  // namespace

void Sink::write_from_device(const Item& item, DeviceFrame) {
  throw std::logic_error("job: " + item.name + ": this sink writes no device frames");
}

int job_workers(int requested) {
  return requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int job_slots(int workers) { return std::min(kMaxSlots, workers + 2); }

JobSummary run_job(Source& source, Engine& engine, Sink& sink, const JobOptions& options,
                   const std::function<void(const ItemResult&)>& on_result) {
  return JobRun(source, engine, sink, options, on_result).run();
}

}  // namespace imgpipe
