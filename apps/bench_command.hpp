// The `imgpipe bench` command line; the benchmark itself is bench::run (bench/bench_run.hpp).
#pragma once

#include "bench_run.hpp"

namespace CLI {
class App;
}

namespace imgpipe::app {

// Adds the `bench` subcommand, its options stored in `options`.
CLI::App* add_bench_command(CLI::App& app, bench::Options& options);

// Runs the benchmark; prints progress on stderr and the table on stdout. Returns kExitOk, kExitSomeFailed
// when a row failed (each says why), or kExitRuntime when --backends named GPU rows and no CUDA device is
// usable (the rows that can run still run). Throws UsageError for bad arguments before measuring anything.
int run_bench(const bench::Options& options);

}  // namespace imgpipe::app
