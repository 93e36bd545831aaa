#include "bench_command.hpp"

#include "chain.hpp"
#include "exit_codes.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace imgpipe::app {

CLI::App* add_bench_command(CLI::App& app, bench::Options& o) {
  CLI::App* c = app.add_subcommand(
      "bench", "Throughput of every backend, the kernels alone, each stage and each technique, against the copy "
               "ceilings measured in the same run");
  CLI::Option* ops = c->add_option("--ops", o.ops, "The op chain, e.g. \"resize=1280x720,gaussian=5:1.0\" (required unless --matrix)");
  c->add_option("--size", o.size, "WxH of the frames; default 1920x1080, or the first input frame's size");
  c->add_option("--frames", o.frames, "Frames per timed repeat")->check(CLI::Range(1, 1000000))->capture_default_str();
  c->add_option("--repeats", o.repeats, "Timed repeats per row; the median is reported")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  c->add_option("--warmup", o.warmup, "Frames run untimed before each row's repeats")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  CLI::Option* slots = c->add_option("--slots", o.slots, "Frames in flight in the optimized engine's end-to-end row")
                           ->check(CLI::Range(1, 16))
                           ->capture_default_str();
  CLI::Option* distinct = c->add_option("--distinct", o.distinct, "Distinct frames made or read")
                              ->check(CLI::Range(1, 64))
                              ->capture_default_str();
  c->add_option("--ceiling-mib", o.ceiling_mib, "MiB per copy when measuring the ceilings")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  CLI::Option* backends =
      c->add_option("--backends", o.backends, "End-to-end and kernel rows for: cpu, naive, optimized, npp");
  c->callback([&o, backends] { o.backends_given = backends->count() > 0; });
  backends->delimiter(',')
      ->check(CLI::IsMember({"cpu", "naive", "optimized", "npp"}))
      ->capture_default_str();
  CLI::Option* sections =
      c->add_option("--sections", o.sections, "Which rows: e2e, kernel, stage, ablation (the ceilings always run)")
          ->delimiter(',')
          ->check(CLI::IsMember({"e2e", "kernel", "stage", "ablation"}))
          ->capture_default_str();
  CLI::Option* matrix =
      c->add_flag("--matrix", o.matrix,
                  "Instead of the sections: every op alone and the usual chains at each --matrix-sizes size, naive, "
                  "optimized (one frame per launch and batched) and NPP, each against its floor, on synthetic "
                  "frames in device memory (docs/bench.md)")
          ->excludes(ops)
          ->excludes(sections)
          ->excludes(slots)
          ->excludes(distinct);
  c->add_option("--matrix-sizes", o.matrix_sizes, "The matrix's frame sizes")
      ->delimiter(',')
      ->capture_default_str();
  c->add_option("--matrix-chains", o.matrix_chains,
                "The matrix's chains instead of its own, each a chain as for --ops; {R} in one stands for two thirds "
                "of the frame's size, {A} for the frame scaled as 1920x1080 -> 1000x700")
      ->needs(matrix);
  c->add_flag("--exact", o.exact,
              "GPU rows with exact arithmetic (OpenCV's bytes for every op); the matrix has exact rows either way");
  c->add_option("--matrix-batch", o.matrix_batch, "Frames per launch in the matrix's batched rows")
      ->check(CLI::Range(2, 64))
      ->capture_default_str();
  c->add_option("--devices", o.devices,
                "Also end-to-end rows of the optimized engine on each of these CUDA devices alone and on all at "
                "once (all, or numbers such as 0,1), with the scaling efficiency: all at once over the devices "
                "times the first alone");
  c->add_option("--input", o.input, "Frames from a folder of images, an image, or a video, instead of synthetic ones")
      ->check(CLI::ExistingPath)
      ->excludes(matrix);
  const CLI::Validator file_name(
      [](const std::string& name) { return name.empty() ? std::string("an empty file name") : std::string(); }, "FILE");
  c->add_option("--json", o.json, "Also write every result as JSON (schema: docs/bench.md)")->check(file_name);
  c->add_option("--trace", o.trace, "Write a Chrome trace-event file (opens in Perfetto) of the optimized ring")
      ->check(file_name);
  c->footer(std::string(chain_help()) + R"(

Rows: end-to-end through each backend's engine (host memory in and out), the chain on device-resident frames,
each op alone, and ablations that swap one technique with everything else held fixed. Every row gives frames
per second, GB/s (bytes that must move: input read once, output written once) and the fraction of the ceiling
that bounds it: the chain's own frames copied up and down with no kernels for end-to-end rows, the
device-to-device copy for kernel rows, a host memcpy for the cpu backend. Without a CUDA device only the cpu
rows run.)");
  return c;
}

int run_bench(const bench::Options& o) {
  bench::Outcome outcome;
  try {
    outcome = bench::run(o);
  } catch (const bench::OptionError& e) {
    throw UsageError(e.what());
  }
  switch (outcome) {
    case bench::Outcome::ok: return kExitOk;
    case bench::Outcome::rows_failed: return kExitSomeFailed;
    case bench::Outcome::gpu_rows_missing: return kExitRuntime;
  }
  return kExitRuntime;
}

}  // namespace imgpipe::app
