// A job: items from a Source, through the chain on an Engine, into a Sink. Every way of running imgpipe is a
// job: a folder of images (io's image folder source and sink), a video or raw frame stream (io's frame
// stream source and sink), the benchmark's end-to-end rows and the Python API.
//
// Each item goes read -> submit -> complete -> write -> report. Reads and writes of different items run on
// several threads at once where the source and sink allow it. Where the sink writes in item order (a stream),
// submission and completion happen in item order too; otherwise an item is submitted as soon as it is read and
// written as soon as it is done, so a slow item holds up no other. Reports always come in item order. Every
// item in flight holds one engine slot from its read to its write, and no more items are started than the
// engine has slots: memory stays bounded, and a slow sink slows the source instead of piling frames up.
#pragma once

#include "engine.hpp"
#include "image.hpp"

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace imgpipe {

// One unit of a job's input: an image file, or one frame of a stream.
struct Item {
  std::uint64_t index = 0;  // position in the source, from 0
  std::string name;         // what messages call it: a path, or "clip.mp4: frame 12"
  std::string refusal;      // why it will not be processed (a failure the source knew in advance), or empty
  bool skip = false;        // not processed, and not a failure (its output exists and the job resumes)
  std::optional<double> time;  // when a timed stream shows the frame, in seconds, where the source knows it
};

// Lends a frame of a size in an engine slot's device input (see FrameSlot::device_input).
using DeviceFrameAllocator = std::function<DeviceFrame(Size)>;

class Source {
 public:
  virtual ~Source() = default;
  // The next item, or nullopt at the end. Called from one thread at a time, in order. An exception is a
  // failure of the item at that position, and ends the job.
  virtual std::optional<Item> next() = 0;
  // Decodes `item` into allocate(size), calling `allocate` once the frame's size is known. Returns the
  // warnings the user should hear about (e.g. transparency dropped). Throws on a bad item.
  virtual std::vector<std::string> read(const Item& item, const FrameAllocator& allocate) = 0;
  // Where the engine keeps frames on the device: like read(), but the source may instead take its frame from
  // `allocate_on_device` and decode into it on the GPU (calling one of the two allocators once). The device
  // frame will be on CUDA device `device`.
  virtual std::vector<std::string> read_on_device(const Item& item, const FrameAllocator& allocate,
                                                  const DeviceFrameAllocator& /*allocate_on_device*/,
                                                  int /*device*/) {
    return read(item, allocate);
  }
  // True when read() may run for different items on several threads at once (image files); false keeps
  // next() and read() of one item together and the items one after another (a stream).
  virtual bool concurrent_reads() const { return false; }
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Writes the output of `item`: in item order unless concurrent_writes(). Throws when it cannot.
  virtual void write(const Item& item, ConstFrameView frame) = 0;
  // True when `item`'s output should stay on the device and come to write_from_device() (a GPU encoder);
  // asked only where the engine keeps frames on the device.
  virtual bool writes_from_device(const Item& /*item*/) const { return false; }
  // The output in the slot's device buffer, complete: the stream has reached it.
  virtual void write_from_device(const Item& item, DeviceFrame frame);
  // Completes the output after the last item; throws when it could not be completed. A sink destroyed without
  // close() leaves no partial output under its name.
  virtual void close() {}
  virtual bool concurrent_writes() const { return false; }
};

// Items started and not yet reported, at most: a finished item's result waits for the reports of the items
// before it, and one slow item must not make those waiting results grow without bound. Above kMaxSlots, so
// that it never keeps an engine slot idle.
constexpr int kMaxUnreported = 1024;
static_assert(kMaxUnreported > kMaxSlots);

struct JobOptions {
  int workers = 1;                    // reads and writes at once, where the source or sink allows (>= 1)
  bool stop_at_first_failure = false;  // a stream: a bad frame ends it (the frames before it still come out)
  std::function<bool()> stop_requested;  // polled before each new item: finish what is in flight, start nothing
};

// The most reads and writes at once a job is asked for (`imgpipe batch --jobs`, run_folder's jobs).
constexpr int kMaxJobs = 1024;

// Reads and writes at once for a request of `requested` (0: one per hardware thread).
int job_workers(int requested);
// Engine slots for a job with `workers` readers and writers: two more, so that the engine has frames queued
// while every worker is busy, at most kMaxSlots.
int job_slots(int workers);

// Where an item failed.
enum class Stage { read, process, write };

struct ItemResult {
  enum class Status {
    done,
    skipped,    // Item::skip
    refused,    // Item::refusal
    failed,     // `error` says why, at `stage`
    abandoned,  // not processed: the GPU had failed before its frame was done (its output could not be trusted)
  };
  Item item;
  Status status = Status::done;
  Stage stage = Stage::read;
  std::exception_ptr error;
  Size size;  // the input's, once its header was read
  std::vector<std::string> warnings;
};

// Where the items' time went, in seconds summed over items (items overlap, so a sum can exceed the job's time):
// reading (for a GPU decoder, the wait for its batch too), waiting for the turn or the lock to submit and
// submitting, waiting until the engine had completed the item, and writing (encoding included). Divided by the
// items, each is the mean time an item spent there; by the job's time, the mean number of items there at once.
struct StageSeconds {
  double read = 0;
  double submit = 0;
  double complete = 0;
  double write = 0;
};

struct JobSummary {
  std::uint64_t items = 0;  // started (read, or refused, or skipped)
  std::uint64_t done = 0;
  std::uint64_t skipped = 0;
  std::uint64_t failed = 0;  // refused, failed or abandoned
  std::optional<ItemResult> first_failure;
  std::string device_failure;  // the sticky CUDA error that stopped the job, or empty
  bool stopped = false;        // stop_requested() ended it before the source did
  double seconds = 0;
  StageSeconds stages;
  // The part of each stage's time the items' own threads ran on a core (a thread's CPU time). Work on other
  // threads (a thread pool, a codec's threads, a GPU decoder's lanes) is not in it; short spin-waits for a turn
  // or for the GPU are.
  StageSeconds stages_on_cpu;
};

// Runs every item of `source` through `engine` into `sink`. `on_result` is called for each item, in item
// order, from one thread at a time (messages, progress). Item failures are reported, not thrown; a sticky CUDA
// error stops the job (JobSummary::device_failure). Does not close the sink.
JobSummary run_job(Source& source, Engine& engine, Sink& sink, const JobOptions& options,
                   const std::function<void(const ItemResult&)>& on_result = {});

}  // namespace imgpipe
