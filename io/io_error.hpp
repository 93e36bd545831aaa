// The one exception io/ throws: what went wrong, and with which file when there is one.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace imgpipe::io {

class IoError : public std::runtime_error {
 public:
  // No file involved (decoding bytes already in memory).
  explicit IoError(const std::string& reason) : std::runtime_error(reason), reason_(reason) {}
  IoError(const std::filesystem::path& path, const std::string& reason)
      : std::runtime_error(path.string() + ": " + reason), path_(path), reason_(reason) {}
  // With the operating system's error behind the reason, so a caller can tell a missing file from other failures.
  IoError(const std::filesystem::path& path, const std::string& reason, std::error_code code) : IoError(path, reason) {
    code_ = code;
  }

  const std::error_code& code() const noexcept { return code_; }

  const std::filesystem::path& path() const noexcept { return path_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::filesystem::path path_;
  std::string reason_;
  std::error_code code_;  // empty where no system call failed
};

// An image refused because it is larger than the pixel limit (a decompression bomb, or simply too big):
// kept apart so a command can say how to raise the limit.
class PixelLimitError : public IoError {
 public:
  using IoError::IoError;
};

}  // namespace imgpipe::io
