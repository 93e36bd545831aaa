// Frame streams for `imgpipe stream`: raw rgb24 (what `ffmpeg -f rawvideo -pix_fmt rgb24` reads and writes)
// on any file descriptor, and video files through OpenCV's VideoCapture / VideoWriter when the build has it.
#pragma once

#include "engine.hpp"
#include "file_bytes.hpp"
#include "io_error.hpp"
#include "ppm.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace imgpipe::io {

// Thrown by a reader whose cancel descriptor became readable (imgpipe stream after SIGINT/SIGTERM).
class StreamCancelled : public IoError {
 public:
  using IoError::IoError;
};

// Fixed-size rgb24 frames back to back. Reads straight into the engine's buffer (no extra copy).
// A stream that ends inside a frame is an error naming the frame, never a silent drop.
// With `cancel_fd` >= 0, every read waits on `fd` and `cancel_fd` together, and once `cancel_fd` is readable
// the reader throws StreamCancelled instead of blocking (a stalled producer cannot keep a stopped run alive).
class RawFrameReader final : public FrameReader {
 public:
  RawFrameReader(int fd, Size frame_size, std::string name, int cancel_fd = -1);
  std::optional<Size> next_size() override;
  void read(FrameView frame) override;
  std::uint64_t frames_read() const { return frames_; }

 private:
  // Reads up to `bytes`; returns how many arrived before end of stream.
  std::size_t read_some(std::uint8_t* dst, std::size_t bytes);

  int fd_;
  Size size_;
  std::string name_;
  int cancel_fd_;
  std::uint64_t frames_ = 0;
  std::optional<std::uint8_t> lookahead_;  // one byte read to learn whether another frame follows
};

class RawFrameWriter final : public FrameWriter {
 public:
  RawFrameWriter(int fd, std::string name);
  void write(ConstFrameView frame) override;

 private:
  int fd_;
  std::string name_;
};

// Opens a video file for reading; throws IoError when it cannot be opened or the build has no OpenCV, and
// PixelLimitError when the size the container declares exceeds `max_pixels` (before a frame is decoded).
// Every frame must have the first frame's size (an error names the frame otherwise).
std::unique_ptr<FrameReader> open_video_reader(const std::filesystem::path& path,
                                               std::uint64_t max_pixels = kDefaultMaxPixels);
// Frames per second the file declares, or nullopt when it declares none.
std::optional<double> video_fps(const std::filesystem::path& path);
// Writes frames of `size` at `fps` (constant frame rate) under a temporary name in the same folder; close()
// checks that the finished file holds every frame, then renames it to `path` (never over an existing file
// with Existing::keep). Any failure, at open, write or close, throws IoError naming `path` and the OS error
// where there is one; nothing is left under `path` and the temporary is removed. The codec comes from the
// extension (.mp4: mp4v, .avi: MJPG, .mkv: XVID).
std::unique_ptr<FrameWriter> open_video_writer(const std::filesystem::path& path, Size size, double fps,
                                               Existing existing);

}  // namespace imgpipe::io
