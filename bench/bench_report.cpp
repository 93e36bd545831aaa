#include "bench_report.hpp"

#include "file_bytes.hpp"

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <span>
#include <stdexcept>
#include <vector>

namespace imgpipe::bench {
namespace {

using Json = nlohmann::ordered_json;

const Ceiling* find_ceiling(const Report& report, const std::string& id) {
  for (const Ceiling& c : report.ceilings)
    if (c.id == id) return &c;
  return nullptr;
}

const Row* find_row(const Report& report, const std::string& section, const std::string& group,
                    const std::string& name) {
  for (const Row& r : report.rows)
    if (r.section == section && r.group == group && r.name == name) return &r;
  return nullptr;
}

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

std::string shorten(std::string text, std::size_t width) {
  if (text.size() > width) text = text.substr(0, width - 1) + "~";
  return text;
}

std::string ceiling_short(const std::string& id) {
  if (id == kPcieFrames) return "pcie";
  if (id == kDeviceCopy) return "d2d";
  if (id == kHostCopy) return "host";
  return id;
}

// Through a temporary renamed into place: a failed or interrupted write leaves an earlier file whole.
void write_text_atomically(const std::filesystem::path& path, const std::string& text) {
  io::write_file_atomically(path, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

}  // namespace

Derived derive(const Report& report, const Row& row) {
  Derived d;
  if (row.status != "ok" || row.us_per_frame <= 0) return d;
  d.fps = 1e6 / row.us_per_frame;
  d.gbps = row.bytes_per_frame * *d.fps / 1e9;
  if (const Ceiling* c = find_ceiling(report, row.ceiling); c && c->gbps > 0) {
    d.ceiling_gbps = c->gbps;
    d.fraction = *d.gbps / c->gbps;
  }
  if (!row.twin.empty()) {
    const Row* twin = find_row(report, row.section, row.group, row.twin);
    if (twin && twin->status == "ok" && twin->us_per_frame > 0) d.speedup = twin->us_per_frame / row.us_per_frame;
  }
  if (!row.peer.empty()) {
    const Row* peer = find_row(report, row.section, row.group, row.peer);
    if (peer && peer->status == "ok" && peer->us_per_frame > 0) d.peer_speedup = peer->us_per_frame / row.us_per_frame;
  }
  return d;
}

namespace {

// The matrix as one line per size and chain: each path's time per frame, the floor, the fractions of it and
// the ratios the targets are stated in.
void print_matrix(const Report& report, std::FILE* out) {
  const Ceiling* d2d = find_ceiling(report, kDeviceCopy);
  std::fprintf(out, "\nmatrix: us per frame on device-resident frames; floor = input + output bytes at the d2d rate;\n"
                    "exact columns: exact arithmetic (OpenCV's bytes), and its time over the fast row's\n");
  std::fprintf(out, "%-40s %7s %8s %9s %9s %8s %7s %7s %10s %8s %9s %9s %7s %7s\n", "size and chain", "floor",
               "naive", "optimized", "batched", "npp", "opt/fl", "bat/fl", "opt/naive", "npp/opt", "opt exact",
               "bat exact", "ex/opt", "ex/bat");
  std::vector<std::string> groups;
  for (const Row& r : report.rows) {
    if (r.section == kMatrixSection && std::find(groups.begin(), groups.end(), r.group) == groups.end()) {
      groups.push_back(r.group);
    }
  }
  for (const std::string& group : groups) {
    const auto time_of = [&](const std::function<bool(const Row&)>& which) -> const Row* {
      for (const Row& r : report.rows) {
        if (r.section == kMatrixSection && r.group == group && which(r)) return r.status == "ok" ? &r : nullptr;
      }
      return nullptr;
    };
    const Row* naive = time_of([](const Row& r) { return r.name == "naive"; });
    const Row* optimized = time_of([](const Row& r) { return r.name == "optimized"; });
    const auto is_batched = [](const Row& r) { return r.name.rfind("optimized x", 0) == 0; };
    const auto is_exact = [](const Row& r) { return r.name.ends_with(" exact"); };
    const Row* batched = time_of([&](const Row& r) { return is_batched(r) && !is_exact(r); });
    const Row* npp = time_of([](const Row& r) { return r.name == "npp"; });
    const Row* optimized_exact = time_of([](const Row& r) { return r.name == "optimized exact"; });
    const Row* batched_exact = time_of([&](const Row& r) { return is_batched(r) && is_exact(r); });
    const Row* any = naive ? naive : optimized ? optimized : batched ? batched : npp;
    if (any == nullptr) continue;
    const double floor_us = d2d && d2d->gbps > 0 ? any->bytes_per_frame / (d2d->gbps * 1e3) : 0;
    const auto us = [](const Row* r) {
      if (!r) return std::string("-");
      char text[16];
      std::snprintf(text, sizeof text, "%.2f", r->us_per_frame);
      return std::string(text);
    };
    const auto ratio = [](const Row* a, const Row* b) {
      if (!a || !b) return std::string("-");
      char text[16];
      std::snprintf(text, sizeof text, "%.2fx", a->us_per_frame / b->us_per_frame);
      return std::string(text);
    };
    const auto of_floor = [&](const Row* r) {
      if (!r || floor_us <= 0) return std::string("-");
      char text[16];
      std::snprintf(text, sizeof text, "%.2fx", r->us_per_frame / floor_us);
      return std::string(text);
    };
    std::fprintf(out, "%-40s %7.2f %8s %9s %9s %8s %7s %7s %10s %8s %9s %9s %7s %7s\n", shorten(group, 40).c_str(),
                 floor_us, us(naive).c_str(), us(optimized).c_str(), us(batched).c_str(), us(npp).c_str(),
                 of_floor(optimized).c_str(), of_floor(batched).c_str(), ratio(naive, optimized).c_str(),
                 ratio(npp, optimized).c_str(), us(optimized_exact).c_str(), us(batched_exact).c_str(),
                 ratio(optimized_exact, optimized).c_str(), ratio(batched_exact, batched).c_str());
  }
}

}  // namespace

void print_table(const Report& report, std::FILE* out) {
  const Parameters& p = report.parameters;
  std::fprintf(out, "\nimgpipe bench %s | %s%s | %s -> %s | %s | %d frames x %d repeats (median) | %s\n",
               report.version.c_str(), p.chain.c_str(), p.exact ? " (exact arithmetic)" : "",
               to_string(p.size).c_str(), to_string(p.output_size).c_str(), p.input.c_str(), p.frames, p.repeats,
               report.date.c_str());
  if (report.device.available) {
    const Device& d = report.device;
    std::fprintf(out, "device: %s (sm_%d%d, %d SMs, %.0f MB L2), driver CUDA %s, runtime %s; host %d threads\n",
                 d.name.c_str(), d.cc_major, d.cc_minor, d.sms, d.l2_bytes / 1e6, d.driver.c_str(),
                 d.runtime.c_str(), report.host_threads);
  } else {
    std::fprintf(out, "device: none (%s); host %d threads\n", report.device.reason.c_str(), report.host_threads);
  }
  std::fprintf(out, "ceilings GB/s:");
  for (const Ceiling& c : report.ceilings) std::fprintf(out, " %s %.1f |", c.id.c_str(), c.gbps);
  std::fprintf(out, "\n");

  std::fprintf(out, "%-10s %-24s %-34s %10s %10s %8s %12s %14s %6s\n", "section", "group", "row", "fps", "us/frame",
               "GB/s", "of ceiling", "speedup/twin", "spread");
  int without_device = 0;
  bool matrix = false;
  for (const Row& r : report.rows) {
    const std::string section = r.section == "end-to-end" ? "e2e" : r.section;
    if (r.status == "skipped" && r.reason.rfind(kNeedsDevice, 0) == 0) {
      ++without_device;
      continue;
    }
    if (r.section == kMatrixSection) {  // in a table of its own, below
      matrix = true;
      continue;
    }
    if (r.status != "ok") {
      std::fprintf(out, "%-10s %-24s %-34s %s: %s\n", section.c_str(), shorten(r.group, 24).c_str(),
                   shorten(r.name, 34).c_str(), r.status.c_str(), shorten(r.reason, 90).c_str());
      continue;
    }
    const Derived d = derive(report, r);
    char fraction[32] = "";
    if (d.fraction) std::snprintf(fraction, sizeof fraction, "%5.1f%% %s", 100 * *d.fraction, ceiling_short(r.ceiling).c_str());
    char speedup[48] = "";
    if (d.speedup) std::snprintf(speedup, sizeof speedup, "%.2fx %s", *d.speedup, shorten(r.twin, 8).c_str());
    std::fprintf(out, "%-10s %-24s %-34s %10.0f %10.2f %8.1f %12s %14s %5.1f%%\n", section.c_str(),
                 shorten(r.group, 24).c_str(), shorten(r.name, 34).c_str(), d.fps.value_or(0), r.us_per_frame,
                 d.gbps.value_or(0), fraction, speedup, 100 * r.spread);
  }
  if (matrix) print_matrix(report, out);
  if (without_device > 0) {
    std::fprintf(out, "%-10s %d GPU rows skipped: they need a CUDA device\n", "gpu", without_device);
  }
  for (const std::string& note : report.notes) std::fprintf(out, "note: %s\n", note.c_str());
  std::fflush(out);
}

void write_json(const Report& report, const std::filesystem::path& path) {
  Json doc;
  doc["schema"] = "imgpipe-bench/1";
  doc["imgpipe_version"] = report.version;
  doc["date"] = report.date;
  doc["command"] = report.command;

  const Device& d = report.device;
  Json device;
  device["available"] = d.available;
  if (d.available) {
    device["name"] = d.name;
    device["compute_capability"] = std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
    device["sms"] = d.sms;
    device["l2_bytes"] = d.l2_bytes;
    device["memory_bytes"] = d.memory_bytes;
  } else {
    device["reason"] = d.reason;
  }
  doc["device"] = device;
  doc["versions"] = {{"cuda_driver", d.driver.empty() ? Json(nullptr) : Json(d.driver)},
                     {"cuda_runtime", d.runtime.empty() ? Json(nullptr) : Json(d.runtime)},
                     {"cuda_toolkit_built_with", std::to_string(CUDART_VERSION / 1000) + "." +
                                                     std::to_string(CUDART_VERSION % 1000 / 10)},
                     {"npp_compiled_in", report.npp},
                     {"cpu_backend", report.cpu_backend}};
  doc["host"] = {{"threads", report.host_threads}};

  const Parameters& p = report.parameters;
  doc["parameters"] = {{"ops", p.ops},
                       {"chain", p.chain},
                       {"size", {{"width", p.size.width}, {"height", p.size.height}}},
                       {"output_size", {{"width", p.output_size.width}, {"height", p.output_size.height}}},
                       {"frames", p.frames},
                       {"repeats", p.repeats},
                       {"warmup_frames", p.warmup},
                       {"slots", p.slots},
                       {"input", p.input},
                       {"distinct_frames", p.distinct_frames},
                       {"device_pool_frames", p.device_pool > 0 ? Json(p.device_pool) : Json(nullptr)},
                       {"ceiling_copy_bytes", p.ceiling_bytes},
                       {"backends", p.backends},
                       {"sections", p.sections},
                       {"exact", p.exact},
                       {"devices", p.devices}};

  Json ceilings = Json::array();
  for (const Ceiling& c : report.ceilings) {
    ceilings.push_back({{"id", c.id},
                        {"label", c.label},
                        {"counts", c.counts},
                        {"bytes", c.bytes},
                        {"gb_per_s", c.gbps},
                        {"spread", c.spread}});
  }
  doc["ceilings"] = ceilings;

  Json rows = Json::array();
  for (const Row& r : report.rows) {
    const Derived x = derive(report, r);
    Json row;
    row["section"] = r.section;
    row["group"] = r.group;
    row["name"] = r.name;
    row["detail"] = r.detail;
    row["status"] = r.status;
    row["reason"] = r.reason.empty() ? Json(nullptr) : Json(r.reason);
    const bool ok = r.status == "ok";
    row["frames"] = ok ? Json(r.frames) : Json(nullptr);
    row["repeats"] = ok ? Json(r.repeats) : Json(nullptr);
    row["us_per_frame"] = ok ? Json(r.us_per_frame) : Json(nullptr);
    row["fps"] = optional_number(x.fps);
    row["bytes_per_frame"] = r.bytes_per_frame > 0 ? Json(r.bytes_per_frame) : Json(nullptr);
    row["gb_per_s"] = optional_number(x.gbps);
    row["ceiling"] = r.ceiling.empty() ? Json(nullptr) : Json(r.ceiling);
    row["ceiling_gb_per_s"] = optional_number(x.ceiling_gbps);
    row["fraction_of_ceiling"] = optional_number(x.fraction);
    row["twin"] = r.twin.empty() ? Json(nullptr) : Json(r.twin);
    row["speedup"] = optional_number(x.speedup);
    row["peer"] = r.peer.empty() ? Json(nullptr) : Json(r.peer);
    row["speedup_over_peer"] = optional_number(x.peer_speedup);
    row["spread"] = ok ? Json(r.spread) : Json(nullptr);
    row["samples_us_per_frame"] = r.samples_us;
    rows.push_back(row);
  }
  doc["rows"] = rows;
  doc["notes"] = report.notes;

  write_text_atomically(path, doc.dump(2) + "\n");
}

void write_trace(const std::filesystem::path& path, const std::string& title, int tracks,
                 const std::vector<TraceSpan>& spans) {
  Json events = Json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", title}}}});
  for (int t = 0; t < tracks; ++t) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", t},
                      {"args", {{"name", "stream " + std::to_string(t) + " (slot " + std::to_string(t) + ")"}}}});
    events.push_back(
        {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", t}, {"args", {{"sort_index", t}}}});
  }
  for (const TraceSpan& s : spans) {
    events.push_back({{"name", s.name},
                      {"cat", s.category},
                      {"ph", "X"},
                      {"ts", s.start_us},
                      {"dur", s.duration_us},
                      {"pid", 1},
                      {"tid", s.track},
                      {"args", {{"frame", s.frame}, {"bytes", s.bytes}}}});
  }
  Json doc;
  doc["traceEvents"] = events;
  doc["displayTimeUnit"] = "ms";
  doc["otherData"] = {{"source", "imgpipe bench --trace"},
                      {"clock", "CUDA events, microseconds from the first event; a span starts when its stream "
                                "reached it, so it includes any wait for a copy engine or for SMs"}};
  write_text_atomically(path, doc.dump(1) + "\n");
}

}  // namespace imgpipe::bench
