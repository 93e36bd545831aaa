#include "signals.hpp"

#include "file_bytes.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <mutex>

namespace imgpipe::app {
namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_wake_read{-1};
std::atomic<int> g_wake_write{-1};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free atomic");

// A non-blocking self-pipe: the handler writes one byte, readers poll the other end.
void make_wake_pipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;  // without it raw reads just are not woken early
    g_wake_read.store(fds[0]);
    g_wake_write.store(fds[1]);
  });
}

// Whether stderr is a terminal, where a progress line may be open: a message from the handler starts a new line
// there, and nowhere else. Set when the handler is installed (isatty is not async-signal-safe).
std::atomic<bool> g_stderr_is_terminal{false};

// `text` starts with a line break, written only where stderr is a terminal.
void write_stderr(const char* text, std::size_t length) {
  const std::size_t skip = g_stderr_is_terminal.load() ? 0 : 1;
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, text + skip, length - skip);
}

// Records the first signal and wakes stop_fd(). Async-signal-safe: lock-free atomics and write(2).
void record_stop(int signal) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, signal);
  const int fd = g_wake_write.load();
  if (fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(fd, &byte, 1);
  }
}

// The first SIGINT/SIGTERM asks for a graceful stop and says so; the next one aborts at once: unfinished
// temporaries are unlinked, so no partial output is left, and the process exits with 128 + the signal.
// Async-signal-safe throughout (unlink(2), write(2), _exit(2)); errno is preserved for the interrupted code.
extern "C" void on_stop_signal(int signal) {
  const int saved = errno;
  if (g_signal.load() != 0) {
    io::remove_unfinished_temporaries();
    constexpr char kAbort[] = "\nimgpipe: aborted; unfinished outputs were removed\n";
    write_stderr(kAbort, sizeof kAbort - 1);
    ::_exit(128 + signal);
  }
  record_stop(signal);
  constexpr char kAck[] =
      "\nimgpipe: stopping: finishing the frames in flight (press Ctrl-C again to abort at once)\n";
  write_stderr(kAck, sizeof kAck - 1);
  errno = saved;
}

}  // namespace

void install_signal_handling() {
  g_stderr_is_terminal.store(::isatty(STDERR_FILENO) == 1);
  make_wake_pipe();
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // other system calls carry on; raw stdin reads are woken through stop_fd()
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  report_failed_writes();
}

void report_failed_writes() {
  ::signal(SIGXFSZ, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
}

int stop_signal() noexcept { return g_signal.load(); }

void request_stop(int signal) noexcept {
  make_wake_pipe();
  record_stop(signal);
}

void clear_stop_for_tests() noexcept {
  g_signal.store(0);
  const int fd = g_wake_read.load();
  char buffer[64];
  if (fd >= 0) {
    while (::read(fd, buffer, sizeof buffer) > 0) {
    }
  }
}

int stop_fd() noexcept { return g_wake_read.load(); }

const char* signal_name(int signal) noexcept {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace imgpipe::app
