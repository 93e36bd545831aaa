// `imgpipe bench` without its command line: every backend, the kernels alone, each stage and each technique,
// against the copy ceilings measured in the same run. docs/bench.md explains the rows and the JSON schema.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace imgpipe::bench {

// One field per option of `imgpipe bench`; messages and the report's command line name them as flags.
struct Options {
  std::string ops;
  std::string size;  // WxH; default 1920x1080, or the first input frame's size
  int frames = 200;  // per timed repeat
  int repeats = 5;
  int warmup = 10;
  int slots = 3;  // the optimized engine's frames in flight
  int distinct = 8;  // distinct host frames
  int ceiling_mib = 256;
  std::vector<std::string> backends = {"cpu", "naive", "optimized", "npp"};
  bool backends_given = false;  // --backends was on the command line: every row it names must be able to run
  std::vector<std::string> sections = {"e2e", "kernel", "stage", "ablation"};
  bool matrix = false;  // the benchmark matrix instead of the sections (its own chains; ops not needed)
  std::vector<std::string> matrix_sizes = {"1280x720", "1920x1080", "3840x2160"};
  std::vector<std::string> matrix_chains;  // empty: the matrix's own chains (bench_matrix.cpp)
  int matrix_batch = 16;
  bool exact = false;  // the GPU rows with exact arithmetic (the matrix has both kinds of row anyway)
  std::string devices;  // --devices: end-to-end rows of the optimized engine on each device and on all at once
  std::string input;
  std::string json;
  std::string trace;
};

// A bad option (the message names it, e.g. "--ops: ..."), found before anything is measured.
class OptionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class Outcome {
  ok,                // every row that ran succeeded
  rows_failed,       // some rows failed; each says why
  gpu_rows_missing,  // --backends named GPU rows and no CUDA device is usable; the rows that can run ran
};

// Runs the benchmark; prints progress on stderr and the table on stdout, and writes the JSON and trace files
// asked for. Throws OptionError for bad options before measuring anything.
Outcome run(const Options& options);

}  // namespace imgpipe::bench
