// What imgpipe's exit status means (documented in the README and in --help).
#pragma once

#include <stdexcept>

namespace imgpipe::app {

enum ExitCode : int {
  kExitOk = 0,           // every file (or frame) succeeded
  kExitSomeFailed = 1,   // the batch ran, some files failed (each reported on stderr); a stream had no frames,
                         // a bad frame ended it, or its file was damaged (the frames read were written)
  kExitUsage = 2,        // bad arguments: unknown option, bad op chain, bad folders; nothing was written
  kExitRuntime = 3,      // no usable backend, or a failure that stopped the run
  kExitDevice = 4,       // the GPU failed for good (a sticky CUDA error such as an illegal address): the run
                         // stopped; files finished before it are complete
  kExitSignalBase = 128, // + the signal: 130 after SIGINT, 143 after SIGTERM (in-flight work finished, summary printed)
};

// A mistake in what the user asked for; main() prints it and exits with kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace imgpipe::app
