// Whole-file reads and crash-safe writes, shared by every codec.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace imgpipe::io {

// Throws IoError naming the path and the system's reason (missing, a directory, no permission, not a regular
// file...). Never blocks on a FIFO or a device: it is refused before anything is read. A file larger than
// `max_bytes` is refused (PixelLimitError) before it is read.
std::vector<std::uint8_t> read_file(const std::filesystem::path& path,
                                    std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max());

// The largest file an image within `max_pixels` pixels can need: 8 bytes a pixel (16-bit RGBA, uncompressed)
// plus 64 MiB for headers and metadata. Larger files are refused unread.
std::uint64_t max_image_file_bytes(std::uint64_t max_pixels);

enum class Existing { replace, keep };

// Hidden, unique per process and call, in the destination's own folder (so the rename never crosses file
// systems), ending in the destination's extension (video writers pick the container from it):
// "dir/.NAME.EXT.imgpipe-tmp-PID-N.EXT".
std::filesystem::path temporary_name_for(const std::filesystem::path& path);

// True for a file name temporary_name_for makes. One that a killed run left behind keeps an image extension, so
// folder walks pass over it rather than take it for an input.
bool is_temporary_name(const std::filesystem::path& filename);

// A temporary file that becomes `path` only through commit(); destroyed uncommitted, it is removed. While it
// exists, remove_unfinished_temporaries() knows its name, so an abort removes it too.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::filesystem::path path);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  const std::filesystem::path& name() const { return temporary_; }
  const std::filesystem::path& destination() const { return path_; }
  // Renames the finished temporary over the destination. With Existing::keep an existing destination is never
  // replaced, even one that appeared while this was writing (the rename refuses atomically). Throws IoError
  // naming the destination, and removes the temporary, when the rename fails, or when the destination leads to
  // a device, a FIFO or a socket, which is never renamed over.
  void commit(Existing existing);

 private:
  std::filesystem::path path_;
  std::filesystem::path temporary_;
  int registry_slot_;
  bool committed_ = false;
};

// Removes every TemporaryFile not yet committed or destroyed, for an abort: a second SIGINT calls it before
// _exit, so an aborted run leaves no partial output behind. From then on write_file_atomically creates no
// temporary (its threads wait for the exit). Async-signal-safe (atomics, nanosleep(2), unlink(2)).
void remove_unfinished_temporaries() noexcept;

// Writes `bytes` to a TemporaryFile beside `path`, then commits it, so a crash or a full disk never leaves a
// truncated file under the real name. The temporary is removed on every failure. The folder must exist. A path
// that leads to a device, a FIFO or a socket (/dev/stdout, a named pipe) is written into, never replaced.
// Throws IoError.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes,
                           Existing existing = Existing::replace);

// The operating system's reason why `path` cannot grow now (ENOSPC, EFBIG under ulimit -f, EDQUOT, EIO...),
// found by appending a probe of zeros and truncating it away; empty when the probe was written. For writers
// whose library hides the error of a failed write (OpenCV's VideoWriter).
std::string append_failure_reason(const std::filesystem::path& path);

}  // namespace imgpipe::io
