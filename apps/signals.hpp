// SIGINT and SIGTERM during batch and stream: the handler only records the signal (and wakes a blocked raw
// reader through a pipe); the commands see it, stop reading new files or frames, finish what is in flight,
// print their summary and exit with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
#pragma once

namespace imgpipe::app {

// Installs the handlers (idempotent). Also ignores SIGXFSZ, so a write over the file-size limit (ulimit -f)
// fails with EFBIG and is reported for that file instead of killing the run.
void install_signal_handling();

// The first SIGINT or SIGTERM received, or 0 when none has arrived.
int stop_signal() noexcept;

// What the handler does: records `signal` (the first one wins) and wakes stop_fd(). For tests and callers that
// need to stop a run themselves.
void request_stop(int signal) noexcept;

// Forget a recorded signal (tests run several commands in one process).
void clear_stop_for_tests() noexcept;

// A descriptor that becomes readable once a stop was requested (poll it beside a blocking read);
// valid after install_signal_handling() or request_stop(), else -1.
int stop_fd() noexcept;

// "SIGINT", "SIGTERM", or "a signal".
const char* signal_name(int signal) noexcept;

}  // namespace imgpipe::app
