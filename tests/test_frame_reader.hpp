// A FrameReader over frames held in memory, for engine and stream tests.
#pragma once

#include "engine.hpp"
#include "image.hpp"

#include <cstring>
#include <optional>
#include <vector>

namespace imgpipe::testing {

class VectorReader final : public FrameReader {
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
  std::size_t next_ = 0;
};

}  // namespace imgpipe::testing
