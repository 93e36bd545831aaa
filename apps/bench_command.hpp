// imgpipe bench: every backend, the kernels alone, each stage and each technique, against the copy ceilings
// measured in the same run. docs/bench.md explains the rows and the JSON schema.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace imgpipe::app {

struct BenchOptions {
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
  std::string input;
  std::string json;
  std::string trace;
};

// Adds the `bench` subcommand, its options stored in `options`.
CLI::App* add_bench_command(CLI::App& app, BenchOptions& options);

// Runs the benchmark; prints progress on stderr and the table on stdout. Returns kExitOk, kExitSomeFailed
// when a row failed (each says why), or kExitRuntime when --backends named GPU rows and no CUDA device is
// usable (the rows that can run still run). Throws UsageError for bad arguments before measuring anything.
int run_bench(const BenchOptions& options);

}  // namespace imgpipe::app
