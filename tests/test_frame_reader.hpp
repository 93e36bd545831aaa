// Frames held in memory as a frame stream, a backend that needs neither OpenCV nor a GPU, and a job that runs any
// frame reader through an engine, for engine, job and stream tests.
#pragma once

#include "backend.hpp"
#include "engine.hpp"
#include "frame_stream.hpp"
#include "image.hpp"
#include "job.hpp"

#include <atomic>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace imgpipe::testing {

// out = 255 - in: a tiny backend, so the engine's and the job's own logic are tested everywhere, and any mix-up
// of frames shows.
class InvertBackend final : public Backend {
 public:
  std::string name() const override { return "invert"; }
  void set_chain(const Chain&) override {}
  void process(ConstFrameView in, FrameView out) override {
    for (std::size_t i = 0; i < in.size.rgb_bytes(); ++i) out.data[i] = static_cast<std::uint8_t>(255 - in.data[i]);
  }
};

class VectorReader final : public io::FrameReader {
 public:
  explicit VectorReader(std::vector<Image> frames) : frames_(std::move(frames)) {}
  std::optional<Size> next_size() override {
    if (next_ == frames_.size()) return std::nullopt;
    return frames_[next_].size();
  }
  void read(FrameView frame) override {
    std::memcpy(frame.data, frames_[next_].data(), frames_[next_].bytes());
    ++next_;
  }
  std::size_t read_count() const { return next_; }

 private:
  std::vector<Image> frames_;
  std::atomic<std::size_t> next_ = 0;  // atomic: a writer's thread reads the count while frames are read
};

// A reader's frames one after another, of any sizes (io::FrameStreamSource keeps a stream to one size).
class ReaderSource final : public Source {
 public:
  explicit ReaderSource(io::FrameReader& reader) : reader_(reader) {}
  std::optional<Item> next() override {
    size_ = reader_.next_size();
    if (!size_) return std::nullopt;
    return Item{index_, "frame " + std::to_string(index_), {}, false, std::nullopt};
  }
  std::vector<std::string> read(const Item&, const FrameAllocator& allocate) override {
    reader_.read(allocate(*size_));
    ++index_;
    return {};
  }

 private:
  io::FrameReader& reader_;
  std::optional<Size> size_;
  std::uint64_t index_ = 0;
};

// Every frame of `reader` through `engine` into `writer`, in order, as a job that stops at the first bad frame
// (after writing the frames before it) and then rethrows its error. Returns the frames written.
inline std::uint64_t run_frames(Engine& engine, io::FrameReader& reader, io::FrameWriter& writer) {
  ReaderSource source(reader);
  io::FrameStreamSink sink(writer);
  JobOptions options;
  options.stop_at_first_failure = true;
  const JobSummary summary = run_job(source, engine, sink, options);
  if (summary.first_failure) std::rethrow_exception(summary.first_failure->error);
  return summary.done;
}

}  // namespace imgpipe::testing
