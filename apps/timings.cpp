#include "timings.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

namespace imgpipe::app {

std::string stage_timings(const JobSummary& summary, std::string_view unit) {
  if (summary.items == 0) return {};
  const double per_item_ms = 1e3 / static_cast<double>(summary.items);
  const StageSeconds& in = summary.stages;
  const StageSeconds& on_cpu = summary.stages_on_cpu;
  char text[400];
  std::snprintf(text, sizeof text,
                "timings: per %.*s, on average (of which on a core): reading and decoding %.2f ms (%.2f), "
                "submitting %.2f ms (%.2f), the chain until complete %.2f ms (%.2f), encoding and writing %.2f ms "
                "(%.2f)",
                static_cast<int>(unit.size()), unit.data(), in.read * per_item_ms, on_cpu.read * per_item_ms,
                in.submit * per_item_ms, on_cpu.submit * per_item_ms, in.complete * per_item_ms,
                on_cpu.complete * per_item_ms, in.write * per_item_ms, on_cpu.write * per_item_ms);
  return text;
}

namespace {

// "device 1: " where a job has codecs on several devices.
std::string device_label(int device, bool name_it) {
  return name_it ? "device " + std::to_string(device) + ": " : "";
}

}  // namespace

std::string decoder_timings(const io::GpuJpegDecoder& decoder, double job_seconds, bool name_device) {
  if (!decoder.has_hardware()) return {};
  const io::GpuJpegDecoder::HardwareActivity activity = decoder.hardware_activity();
  const double thread_seconds = activity.threads * std::max(job_seconds, 1e-9);
  const bool decoupled = activity.api == io::GpuJpegDecoder::HardwareApi::decoupled;
  char what[160];
  if (decoupled) {
    std::snprintf(what, sizeof what, "%llu files through nvJPEG's decoupled decoder, its %d threads",
                  static_cast<unsigned long long>(activity.files), activity.threads);
  } else {
    std::snprintf(
        what, sizeof what, "%llu batches of %.1f files on average, the %d lane(s)",
        static_cast<unsigned long long>(activity.batches),
        activity.batches > 0 ? static_cast<double>(activity.files) / static_cast<double>(activity.batches) : 0.0,
        activity.threads);
  }
  char text[400];
  std::snprintf(text, sizeof text,
                "timings: %shardware JPEG decoding: %s busy %.0f%% of the job (%.0f%% in %s, %.0f%% waiting for the "
                "GPU work queued)",
                device_label(decoder.device(), name_device).c_str(), what,
                100.0 * activity.busy_seconds() / thread_seconds, 100.0 * activity.host_seconds / thread_seconds,
                decoupled ? "nvJPEG's calls" : "nvjpegDecodeBatched, which returns once the engines are nearly done",
                100.0 * activity.waiting_seconds / thread_seconds);
  return text;
}

CpuTime process_cpu_time() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return {seconds(usage.ru_utime), seconds(usage.ru_stime)};
}

std::string cpu_timings(const CpuTime& before, const CpuTime& after, double job_seconds) {
  const double user = after.user - before.user, system = after.system - before.system;
  char text[200];
  std::snprintf(text, sizeof text,
                "timings: CPU: %.1f of the %u cores busy on average over the job (user %.2f s, system %.2f s)",
                (user + system) / std::max(job_seconds, 1e-9), std::max(1u, std::thread::hardware_concurrency()),
                user, system);
  return text;
}

std::string encoder_timings(const io::GpuJpegEncoder& encoder, double job_seconds, bool name_device) {
  char text[192];
  std::snprintf(text, sizeof text, "timings: %sGPU JPEG encoding: the %d encoder states busy %.0f%% of the job",
                device_label(encoder.device(), name_device).c_str(), encoder.states(),
                100.0 * encoder.busy_seconds() / (encoder.states() * std::max(job_seconds, 1e-9)));
  return text;
}

}  // namespace imgpipe::app
