// What batch and stream print while they run: messages on stderr, and on a terminal one progress line that
// rewrites itself (messages clear it first, so they never land in the middle of it).
#pragma once

#include <unistd.h>

#include <iostream>
#include <mutex>
#include <string>

namespace imgpipe::app {

// `text` with its control characters (a file name's newline or escape sequence) as \xHH, so that a name
// can neither break a message's line nor drive the terminal.
inline std::string printable(const std::string& text) {
  std::string shown;
  shown.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7F) {
      shown += c;
      continue;
    }
    constexpr char kHex[] = "0123456789abcdef";
    shown += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xF]};
  }
  return shown;
}

// `text` after `prefix` (a file's name and ": "), unless it already starts with it, as messages naming the file do.
inline std::string prefixed(const std::string& prefix, const std::string& text) {
  return text.starts_with(prefix) ? text : prefix + text;
}

// Follows every pixel-limit refusal the commands print.
inline constexpr const char* kPixelLimitHint = "; --max-pixels or IMGPIPE_MAX_PIXELS raises the limit";

// Messages of runs in several threads at once (a folder of videos) come out whole, each after `prefix`; such
// runs show no progress line.
class Progress {
 public:
  explicit Progress(std::string prefix = {})
      : terminal_(::isatty(STDERR_FILENO) == 1 && prefix.empty()), prefix_(std::move(prefix)) {}

  void message(const std::string& text) {
    static std::mutex whole_lines;
    const std::lock_guard lock(whole_lines);
    clear();
    std::cerr << "imgpipe: " + printable(prefixed(prefix_, text)) + "\n" << std::flush;  // one write, whole
  }
  void show(const std::string& line) {
    if (terminal_) std::cerr << "\r\033[K" << line << std::flush;
  }
  void clear() {
    if (terminal_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  bool terminal_;
  std::string prefix_;
};

}  // namespace imgpipe::app
