// The measurements of `imgpipe bench`, section by section. Each appends its rows to the report (skipped and
// failed ones too, with the reason) and prints one progress line per row on stderr. docs/bench.md says what
// every row means.
#pragma once

#include "backend.hpp"
#include "bench_report.hpp"
#include "chain.hpp"
#include "image.hpp"

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace imgpipe::bench {

struct Settings {
  Chain chain;
  std::vector<Image> frames;  // host frames, all of `size`
  Size size;
  Size out_size;
  int frames_per_repeat = 200;
  int repeats = 5;
  int warmup = 10;  // frames run untimed before the repeats of every row
  int slots = 3;    // the optimized engine's frames in flight
  std::size_t ceiling_bytes = std::size_t{256} << 20;
  int device_pool = 0;  // frames rotated through in device memory (set by measure_device_ceilings)
  std::set<std::string> backends;  // cpu, naive, optimized, npp
  std::set<std::string> sections;  // e2e, kernel, stage, ablation, matrix
  std::vector<Size> matrix_sizes;  // the matrix's input sizes
  std::vector<std::string> matrix_chains;  // its chains, {R} and {A} standing for sizes (matrix_chain_at)
  int matrix_batch = 16;           // frames per launch in the matrix's batched rows
  Arithmetic arithmetic = Arithmetic::fast;  // how the e2e, kernel, stage and ablation GPU rows round
  std::vector<int> devices;  // the end-to-end scaling rows' devices; fewer than two: no such rows
};

// The device imgpipe would run on, the driver's and the runtime's CUDA versions; available false (with the
// reason) when the CUDA runtime sees no usable device.
Device describe_device();

// Frames to rotate through in device memory so they do not all sit in L2: twice L2 of inputs, 2 to 64 frames.
int device_pool_frames(Size in);

// host_memcpy: a memcpy over all hardware threads, bytes read + written.
void measure_host_ceiling(const Settings& settings, Report& report);
// The PCIe and device-memory ceilings (needs a device).
void measure_device_ceilings(const Settings& settings, Report& report);

// Each backend through its engine, pinned host memory in and out (cpu: pageable), plus NPP on a two-stream ring;
// with settings.devices, the optimized engine on each of them alone and on all of them at once.
void measure_end_to_end(const Settings& settings, Report& report);
// The chain on device-resident frames (DeviceChain naive and optimized, NPP), and each op of it alone.
void measure_kernels(const Settings& settings, Report& report);
// Every op alone and the chains users run, at each of settings.matrix_sizes, on device-resident frames: naive,
// optimized one frame per launch and batched, and NPP where it has the chain; each row against the floor of
// the bytes it must move (bench_matrix.cpp).
void measure_matrix(const Settings& settings, Report& report);
// The matrix's untimed frames before each row: --warmup rounded up to whole batches, at least one.
int matrix_warmup_frames(int warmup, int batch);
// The chains the matrix runs unless told others: every op alone, then the chains users run.
std::vector<std::string> default_matrix_chains();
// A matrix chain for frames of `in`: {R} in `spec` stands for two thirds of `in` (1920x1080 -> 1280x720), {A} for
// `in` scaled as 1920x1080 -> 1000x700. Throws ChainError where the chain does not parse.
Chain matrix_chain_at(std::string spec, Size in);

// One technique at a time, each row with its twin.
void measure_ablations(const Settings& settings, Report& report);

// A Chrome trace-event file of the optimized chain on a ring of settings.slots streams.
void record_trace(const Settings& settings, const std::filesystem::path& path, Report& report);

}  // namespace imgpipe::bench
