// Shared by the fuzz targets: a property violation prints what was seen and aborts, so libFuzzer
// (or the replay driver) records the input as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace imgpipe::fuzz {

[[noreturn]] inline void fail(const char* target, const std::string& what) {
  std::fprintf(stderr, "%s: property violated: %s\n", target, what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace imgpipe::fuzz
