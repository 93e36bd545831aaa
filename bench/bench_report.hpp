// What `imgpipe bench` measured, and the ways it is written out: the table on stdout, the JSON document
// (schema in docs/bench.md) and the Chrome trace-event file.
#pragma once

#include "image.hpp"

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace imgpipe::bench {

// A copy rate measured in the same run; every throughput row is a fraction of one of these.
struct Ceiling {
  std::string id;     // pcie_h2d_pinned, pcie_d2h_pinned, pcie_both_pinned, pcie_h2d_pageable, pcie_d2h_pageable,
                      // d2d, pcie_frames_pinned, host_memcpy
  std::string label;  // for people
  std::string counts;  // which bytes the rate counts
  double bytes = 0;    // moved per timed copy, as counted
  double gbps = 0;     // median over the repeats
  double spread = 0;   // (max - min) / median
};

// Ceiling ids the rows point at.
inline constexpr const char* kPcieFrames = "pcie_frames_pinned";
inline constexpr const char* kDeviceCopy = "d2d";
inline constexpr const char* kHostCopy = "host_memcpy";
// The section of the benchmark matrix's rows, which the table prints apart.
inline constexpr const char* kMatrixSection = "matrix";
// The reason every GPU row gives on a machine without a usable CUDA device.
inline constexpr const char* kNeedsDevice = "GPU rows need a CUDA device";

struct Row {
  std::string section;  // end-to-end | kernel | stage | ablation
  std::string group;    // the ablation (or the stage's op); "" for the others
  std::string name;     // unique within section + group
  std::string detail;   // what exactly ran
  std::string status = "ok";  // ok | skipped | failed
  std::string reason;         // why skipped or failed
  int frames = 0;             // per timed repeat
  int repeats = 0;
  double us_per_frame = 0;     // median over the repeats
  double spread = 0;           // (max - min) / median of the repeats' per-frame times
  double bytes_per_frame = 0;  // that must move: each input byte read once, each output byte written once
  std::string ceiling;         // the Ceiling id that bounds it
  std::string twin;            // the row of the same section + group it is compared with ("" for none)
  std::string peer;            // a second row of the same section + group it is compared with (the matrix's NPP)
  std::vector<double> samples_us;  // per-frame time of each repeat
};

struct Device {
  bool available = false;
  std::string reason;  // why not, when not
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  double l2_bytes = 0;
  double memory_bytes = 0;
  std::string driver;   // CUDA version the driver supports, e.g. "13.0"
  std::string runtime;  // CUDA runtime linked in
};

struct Parameters {
  std::string ops;    // as given
  std::string chain;  // as parsed
  Size size;
  Size output_size;
  int frames = 0;
  int repeats = 0;
  int warmup = 0;
  int slots = 0;
  std::string input;  // where the frames came from
  int distinct_frames = 0;
  int device_pool = 0;  // frames rotated through in device memory
  double ceiling_bytes = 0;
  std::vector<std::string> backends;
  std::vector<std::string> sections;
  bool exact = false;  // the GPU rows outside the matrix with exact arithmetic
  std::vector<int> devices;  // --devices: the devices of the scaling rows; empty: none
};

struct Report {
  std::string version;
  std::string date;  // UTC, ISO 8601
  std::string command;
  int host_threads = 0;
  std::string cpu_backend;  // what the cpu backend runs on, or why it is not here
  bool npp = false;         // NPP compiled in
  Device device;
  Parameters parameters;
  std::vector<Ceiling> ceilings;
  std::vector<Row> rows;
  std::vector<std::string> notes;
};

// Derived per row: frames/s, GB/s, the ceiling's rate and the fraction of it, the speedup over the twin and
// over the peer.
struct Derived {
  std::optional<double> fps, gbps, ceiling_gbps, fraction, speedup, peer_speedup;
};
Derived derive(const Report& report, const Row& row);

// A readable table: parameters, ceilings, every row. Compact enough to be the last thing printed.
void print_table(const Report& report, std::FILE* out);
void write_json(const Report& report, const std::filesystem::path& path);

// One interval on one track of the trace (times in microseconds from a common start).
struct TraceSpan {
  std::string name;  // upload | chain | download
  std::string category;
  int track = 0;  // stream index
  double start_us = 0;
  double duration_us = 0;
  int frame = 0;
  double bytes = 0;
};
void write_trace(const std::filesystem::path& path, const std::string& title, int tracks,
                 const std::vector<TraceSpan>& spans);

}  // namespace imgpipe::bench
