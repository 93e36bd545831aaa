// imgpipe bench run as a user would, tiny: the JSON it writes has the documented structure (docs/bench.md),
// every measured number is positive, and without a CUDA device the GPU rows say they need one. Nothing here
// asserts a speed.
#include "backends.hpp"
#include "cuda_check.hpp"
#include "test_io_helpers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace imgpipe {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using testing::CommandResult;

CommandResult imgpipe(const std::string& arguments) { return testing::run_command(IMGPIPE_BINARY, arguments); }

Json read_json(const fs::path& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  return Json::parse(f);  // throws, failing the test, when the file is not JSON
}

bool positive_number(const Json& v) { return v.is_number() && v.get<double>() > 0; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void expect_usage_error(const std::string& arguments, const std::string& message) {
  const CommandResult run = imgpipe(arguments);
  EXPECT_EQ(run.exit_code, 2) << arguments << "\n" << run.output;
  EXPECT_TRUE(contains(run.output, message)) << arguments << "\n" << run.output;
}

constexpr const char* kTinyRun =
    "bench --frames 3 --repeats 1 --warmup 1 --size 64x48 --distinct 2 --ceiling-mib 2 "
    "--ops resize=32x24,gaussian=5:1.0";

TEST(BenchCommand, WritesTheDocumentedJson) {
  const testing::TempDir dir;
  const fs::path json = dir.path() / "bench.json", trace = dir.path() / "trace.json";
  const CommandResult run = imgpipe(std::string(kTinyRun) + " --json '" + json.string() + "' --trace '" +
                                    trace.string() + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("ceilings GB/s"), std::string::npos) << run.output;

  const Json doc = read_json(json);
  EXPECT_EQ(doc.at("schema"), "imgpipe-bench/1");
  for (const char* key : {"imgpipe_version", "date", "command", "device", "versions", "host", "parameters",
                          "ceilings", "rows", "notes"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  const Json& p = doc.at("parameters");
  EXPECT_EQ(p.at("size").at("width"), 64);
  EXPECT_EQ(p.at("size").at("height"), 48);
  EXPECT_EQ(p.at("output_size").at("width"), 32);
  EXPECT_EQ(p.at("frames"), 3);
  EXPECT_EQ(p.at("repeats"), 1);
  EXPECT_EQ(p.at("chain"), "resize=32x24,gaussian=5:1");
  EXPECT_EQ(p.at("exact"), false);
  EXPECT_EQ(p.at("distinct_frames"), 2);

  // Ceilings: the host's always; the device's with a device. Every rate positive.
  std::set<std::string> ceilings;
  for (const Json& c : doc.at("ceilings")) {
    ceilings.insert(c.at("id").get<std::string>());
    EXPECT_TRUE(positive_number(c.at("gb_per_s"))) << c.dump();
    EXPECT_TRUE(positive_number(c.at("bytes"))) << c.dump();
  }
  EXPECT_TRUE(ceilings.contains("host_memcpy"));
  const bool device = doc.at("device").at("available").get<bool>();
  EXPECT_EQ(device, cuda::device_available());
  EXPECT_TRUE(device ? positive_number(p.at("device_pool_frames")) : p.at("device_pool_frames").is_null());
  if (device) {
    for (const char* id : {"pcie_h2d_pinned", "pcie_d2h_pinned", "pcie_both_pinned", "pcie_h2d_pageable",
                           "pcie_d2h_pageable", "d2d", "pcie_frames_pinned"}) {
      EXPECT_TRUE(ceilings.contains(id)) << id;
    }
  }

  // Rows: every section present; ok rows carry positive numbers; the others say why.
  const Json& rows = doc.at("rows");
  ASSERT_TRUE(rows.is_array());
  ASSERT_FALSE(rows.empty());
  std::set<std::string> sections;
  int ok = 0;
  for (const Json& r : rows) {
    sections.insert(r.at("section").get<std::string>());
    ASSERT_TRUE(r.at("name").is_string()) << r.dump();
    const std::string status = r.at("status");
    ASSERT_TRUE(status == "ok" || status == "skipped" || status == "failed") << r.dump();
    EXPECT_NE(status, "failed") << r.dump();
    if (status != "ok") {
      EXPECT_TRUE(r.at("reason").is_string()) << r.dump();
      for (const char* key : {"fps", "frames", "repeats"})
        EXPECT_TRUE(r.at(key).is_null()) << key << " in " << r.dump();
      if (!device && r.at("name") != "cpu") {
        EXPECT_NE(r.at("reason").get<std::string>().find("CUDA device"), std::string::npos) << r.dump();
      }
      continue;
    }
    ++ok;
    for (const char* key : {"us_per_frame", "fps", "bytes_per_frame", "gb_per_s", "ceiling_gb_per_s",
                            "fraction_of_ceiling"}) {
      EXPECT_TRUE(positive_number(r.at(key))) << key << " in " << r.dump();
    }
    EXPECT_TRUE(r.at("spread").is_number() && r.at("spread").get<double>() >= 0) << r.dump();
    EXPECT_EQ(r.at("samples_us_per_frame").size(), 1u) << r.dump();
    EXPECT_TRUE(ceilings.contains(r.at("ceiling").get<std::string>())) << r.dump();
    if (!r.at("twin").is_null()) {
      EXPECT_TRUE(r.at("speedup").is_null() || positive_number(r.at("speedup"))) << r.dump();
    }
  }
  for (const char* s : {"end-to-end", "kernel", "stage", "ablation"}) EXPECT_TRUE(sections.contains(s)) << s;

  bool cpu_usable = false;
  for (const BackendInfo& b : available_backends()) cpu_usable = cpu_usable || (b.kind == BackendKind::cpu && b.usable);
  if (device) {
    EXPECT_GT(ok, 20) << "with a device, the GPU rows run";
    const Json t = read_json(trace);
    ASSERT_TRUE(t.at("traceEvents").is_array());
    int spans = 0;
    for (const Json& e : t.at("traceEvents")) {
      if (e.at("ph") != "X") continue;
      ++spans;
      EXPECT_TRUE(e.at("ts").get<double>() >= 0 && e.at("dur").get<double>() >= 0) << e.dump();
    }
    EXPECT_GT(spans, 0);
  } else {
    EXPECT_EQ(ok, cpu_usable ? 1 : 0) << "without a device, only the cpu row runs";
    EXPECT_FALSE(fs::exists(trace)) << "no trace without a device";
    EXPECT_NE(run.output.find("GPU rows need a CUDA device"), std::string::npos) << run.output;
  }
}

// The matrix: every chain at every size, seven rows each (naive, optimized, batched, each also with exact
// arithmetic, and NPP); with a device the fast optimized rows name naive as their twin, the exact ones their fast
// row, and all NPP as their peer; without one, every row says it needs one.
// --exact runs the GPU rows with exact arithmetic and says so in the JSON, the command line and the table.
TEST(BenchCommand, ExactIsRecordedWhereverTheRunIsDescribed) {
  const testing::TempDir dir;
  const fs::path json = dir.path() / "bench.json";
  const CommandResult run =
      imgpipe(std::string(kTinyRun) + " --sections kernel --exact --json '" + json.string() + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("(exact arithmetic)"), std::string::npos) << run.output;
  const Json doc = read_json(json);
  EXPECT_EQ(doc.at("parameters").at("exact"), true);
  EXPECT_NE(doc.at("command").get<std::string>().find(" --exact"), std::string::npos) << doc.at("command");
}

// A small matrix (sizes 64x48 and 33x17, two frames per launch) with `options` added, and the JSON it wrote.
struct MatrixRun {
  CommandResult run;
  Json doc;
};
MatrixRun run_small_matrix(const std::string& options) {
  const testing::TempDir dir;
  const fs::path json = dir.path() / "matrix.json";
  MatrixRun m{imgpipe("bench --matrix --matrix-sizes 64x48,33x17 --matrix-batch 2 --frames 2 --repeats 1 "
                      "--ceiling-mib 2 " +
                      options + " --json '" + json.string() + "'"),
              Json()};
  if (m.run.exit_code == 0) m.doc = read_json(json);
  return m;
}

TEST(BenchCommand, TheMatrixCoversEveryChainAtEverySize) {
  const auto [run, doc] = run_small_matrix("--warmup 3");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(doc.at("parameters").at("sections"), Json::array({"matrix"}));
  EXPECT_EQ(doc.at("parameters").at("warmup_frames"), 4) << "--warmup 3 rounded up to whole batches of 2";
  std::map<std::string, std::set<std::string>> names_by_group;
  const bool device = doc.at("device").at("available").get<bool>();
  for (const Json& r : doc.at("rows")) {
    ASSERT_EQ(r.at("section"), "matrix") << r.dump();
    names_by_group[r.at("group").get<std::string>()].insert(r.at("name").get<std::string>());
    const std::string status = r.at("status");
    EXPECT_NE(status, "failed") << r.dump();
    EXPECT_TRUE(positive_number(r.at("bytes_per_frame"))) << r.dump();
    EXPECT_EQ(r.at("ceiling"), "d2d") << r.dump();
    if (!device) {
      EXPECT_EQ(status, "skipped") << r.dump();
      EXPECT_NE(r.at("reason").get<std::string>().find("CUDA device"), std::string::npos) << r.dump();
    } else if (status == "ok" && r.at("name").get<std::string>().rfind("optimized", 0) == 0) {
      // Fast rows are set against naive; exact rows against their own fast row, which is the cost of exactness.
      const std::string name = r.at("name");
      const bool exact = name.ends_with(" exact");
      EXPECT_EQ(r.at("twin"), exact ? name.substr(0, name.size() - 6) : "naive") << r.dump();
      EXPECT_EQ(r.at("peer"), "npp") << r.dump();
      EXPECT_TRUE(positive_number(r.at("speedup"))) << r.dump();
    }
  }
  EXPECT_EQ(names_by_group.size(), 2u * 14u) << "14 chains at each of 2 sizes";
  EXPECT_TRUE(names_by_group.contains("64x48 resize=43x32")) << "resize to two thirds";
  EXPECT_TRUE(names_by_group.contains("33x17 rotate=90,flip=h,sharpen"));
  for (const auto& [group, names] : names_by_group) {
    EXPECT_EQ(names, (std::set<std::string>{"naive", "optimized", "optimized x2", "naive exact", "optimized exact",
                                            "optimized x2 exact", "npp"}))
        << group;
  }
  if (!device) {
    EXPECT_NE(run.output.find("GPU rows need a CUDA device"), std::string::npos) << run.output;
  }
}

// --matrix-chains: the matrix runs the chains it names, {R} standing for two thirds of each size, and the command
// recorded names them so that it runs again as it ran.
TEST(BenchCommand, TheMatrixRunsTheChainsItIsGiven) {
  const auto [run, doc] = run_small_matrix("--matrix-chains gray,sharpen 'resize={R},gray'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::set<std::string> groups;
  for (const Json& r : doc.at("rows")) groups.insert(r.at("group").get<std::string>());
  EXPECT_EQ(groups, (std::set<std::string>{"64x48 gray,sharpen", "64x48 resize=43x32,gray", "33x17 gray,sharpen",
                                           "33x17 resize=22x11,gray"}));
  EXPECT_NE(doc.at("command").get<std::string>().find(" --matrix-chains gray,sharpen 'resize={R},gray'"),
            std::string::npos)
      << doc.at("command");
}

TEST(BenchCommand, BadArgumentsAreUsageErrors) {
  EXPECT_EQ(imgpipe("bench --frames 1 --repeats 1").exit_code, 2) << "no --ops and no --matrix";
  EXPECT_EQ(imgpipe("bench --matrix --ops gray").exit_code, 2) << "--matrix runs its own chains";
  EXPECT_EQ(imgpipe("bench --matrix --matrix-sizes 64x0").exit_code, 2);
  EXPECT_EQ(imgpipe("bench --ops bogus --frames 1 --repeats 1").exit_code, 2);
  EXPECT_EQ(imgpipe("bench --ops gray --size 0x5 --frames 1 --repeats 1").exit_code, 2);
  EXPECT_EQ(imgpipe("bench --ops gray --backends cpu,tpu").exit_code, 2);
  EXPECT_EQ(imgpipe("bench --ops gray --json /nonexistent-folder/x.json").exit_code, 2);
  EXPECT_EQ(imgpipe("bench --ops gray --json ''").exit_code, 2);
  EXPECT_EQ(imgpipe("bench --matrix --matrix-sizes 64x48,64x48").exit_code, 2) << "a size named twice";
  for (const char* not_matrix : {"--slots 2", "--distinct 2", "--input ."}) {
    EXPECT_EQ(imgpipe(std::string("bench --matrix ") + not_matrix).exit_code, 2)
        << not_matrix << ": the matrix's frames are its own";
  }
  expect_usage_error("bench --matrix --backends cpu", "--matrix has GPU rows only");
  expect_usage_error("bench --matrix --matrix-chains gray,bogus", "--matrix-chains gray,bogus: ");
  expect_usage_error("bench --matrix --matrix-chains gray sobel gray", "--matrix-chains: gray is named twice");
  expect_usage_error("bench --ops gray --matrix-chains gray", "--matrix-chains requires --matrix");
  expect_usage_error("bench --ops gray --backends cpu --sections kernel,stage", "nothing to measure");
}

// Options that can only fail at the end of a run fail before it: a --json that is a folder, and an --input
// with nothing to measure, are usage errors (exit 2) that name them.
TEST(BenchCommand, FilesThatCannotBeUsedAreRefusedBeforeMeasuring) {
  const testing::TempDir dir;
  CommandResult run = imgpipe(std::string(kTinyRun) + " --json " + testing::quoted(dir.path()));
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, dir.path().string() + ": is a folder")) << run.output;
  EXPECT_FALSE(contains(run.output, "ceilings GB/s")) << "nothing measured";

  const fs::path empty = dir.path() / "empty";
  fs::create_directory(empty);
  run = imgpipe("bench --ops gray --frames 1 --repeats 1 --input '" + empty.string() + "'");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_TRUE(contains(run.output, "--input: " + empty.string() + ": no images")) << run.output;
  EXPECT_FALSE(contains(run.output, "ceilings GB/s")) << "nothing measured";
}

// A JSON file whose write fails (here the file-size limit) leaves the file that was there whole, no temporary
// beside it, and the table on stdout; the exit status says the run was not clean.
TEST(BenchCommand, AFailedJsonWriteKeepsTheEarlierFileAndTheTable) {
  const testing::TempDir dir;
  const fs::path json = dir.path() / "bench.json";
  testing::write_bytes(json, "the earlier results");
  const CommandResult run =
      testing::run_command(IMGPIPE_BINARY, std::string(kTinyRun) + " --json " + testing::quoted(json), "ulimit -f 4;");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_TRUE(contains(run.output, "ceilings GB/s")) << run.output;
  EXPECT_TRUE(contains(run.output, json.string())) << run.output;
  const std::vector<std::uint8_t> kept = testing::file_bytes(json);
  EXPECT_EQ(std::string(kept.begin(), kept.end()), "the earlier results");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1) << "no temporary left";
}

// The "command" in the JSON, typed again, runs the same bench: every option that ran, quoted for the shell, and
// --backends only where it was given (naming it turns rows that cannot run into exit 3).
TEST(BenchCommand, TheRecordedCommandRunsTheSameBench) {
  const testing::TempDir dir;
  const fs::path json = dir.path() / "my results.json";
  const CommandResult run = imgpipe(std::string(kTinyRun) + " --json " + testing::quoted(json));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Json first = read_json(json);
  const std::string command = first.at("command");
  EXPECT_TRUE(contains(command, "--distinct 2")) << command;
  EXPECT_TRUE(contains(command, "--json " + testing::quoted(json))) << command;
  EXPECT_FALSE(contains(command, "--backends")) << command;

  const std::string prefix = "imgpipe ";
  ASSERT_EQ(command.rfind(prefix, 0), 0u) << command;
  const CommandResult again = testing::run_command(IMGPIPE_BINARY, command.substr(prefix.size()));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const Json second = read_json(json);
  EXPECT_EQ(second.at("command"), command);
  EXPECT_EQ(second.at("parameters"), first.at("parameters"));
}

}  // namespace
}  // namespace imgpipe
