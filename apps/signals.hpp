// SIGINT and SIGTERM during batch and stream: the first one is acknowledged on stderr and recorded (a blocked
// raw reader is woken through a pipe); the commands see it, stop reading new files or frames, finish what is
// in flight, print their summary and exit with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
// A second one aborts at once: the unfinished temporaries of outputs are removed (completed outputs stay)
// and the process exits with 128 + the signal.
#pragma once

namespace imgpipe::app {

// Installs the handlers (idempotent), and report_failed_writes().
void install_signal_handling();

// Ignores SIGXFSZ, so a write over the file-size limit (ulimit -f) fails with EFBIG and is reported for that
// file instead of killing the run, and SIGPIPE, so a reader that closes imgpipe's stdout makes the write fail
// with EPIPE, reported, instead of killing imgpipe silently.
void report_failed_writes();

// The first SIGINT or SIGTERM received, or 0 when none has arrived.
int stop_signal() noexcept;

// What the handler does for a first signal, without the message: records `signal` (the first one wins) and
// wakes stop_fd(). For tests and callers that need to stop a run themselves.
void request_stop(int signal) noexcept;

// Forget a recorded signal (tests run several commands in one process).
void clear_stop_for_tests() noexcept;

// A descriptor that becomes readable once a stop was requested (poll it beside a blocking read);
// valid after install_signal_handling() or request_stop(), else -1.
int stop_fd() noexcept;

// "SIGINT", "SIGTERM", or "a signal".
const char* signal_name(int signal) noexcept;

}  // namespace imgpipe::app
