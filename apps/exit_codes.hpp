// What imgpipe's exit status means (documented in the README).
#pragma once

#include <stdexcept>

namespace imgpipe::app {

enum ExitCode : int {
  kExitOk = 0,           // every file succeeded
  kExitSomeFailed = 1,   // the batch ran, some files failed (each reported on stderr)
  kExitUsage = 2,        // bad arguments: unknown option, bad op chain, bad folders; nothing was written
  kExitRuntime = 3,      // no usable backend, or a failure that stopped the run
};

// A mistake in what the user asked for; main() prints it and exits with kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace imgpipe::app
