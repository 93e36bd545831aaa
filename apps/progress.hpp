// What batch and stream print while they run: messages on stderr, and on a terminal one progress line that
// rewrites itself (messages clear it first, so they never land in the middle of it).
#pragma once

#include <unistd.h>

#include <iostream>
#include <string>

namespace imgpipe::app {

// Follows every pixel-limit refusal the commands print.
inline constexpr const char* kPixelLimitHint = "; --max-pixels or IMGPIPE_MAX_PIXELS raises the limit";

class Progress {
 public:
  Progress() : terminal_(::isatty(STDERR_FILENO) == 1) {}

  void message(const std::string& text) {
    clear();
    std::cerr << "imgpipe: " << text << "\n";
  }
  void show(const std::string& line) {
    if (terminal_) std::cerr << "\r\033[K" << line << std::flush;
  }
  void clear() {
    if (terminal_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  bool terminal_;
};

}  // namespace imgpipe::app
