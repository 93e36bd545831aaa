#include "timings.hpp"

#include <algorithm>
#include <cstdio>

namespace imgpipe::app {

std::string stage_timings(const JobSummary& summary, std::string_view unit) {
  if (summary.items == 0) return {};
  const double per_item_ms = 1e3 / static_cast<double>(summary.items);
  char text[320];
  std::snprintf(text, sizeof text,
                "timings: per %.*s, on average: reading and decoding %.2f ms, submitting in order %.2f ms, "
                "the chain until complete %.2f ms, encoding and writing %.2f ms",
                static_cast<int>(unit.size()), unit.data(), summary.stages.read * per_item_ms,
                summary.stages.submit * per_item_ms, summary.stages.complete * per_item_ms,
                summary.stages.write * per_item_ms);
  return text;
}

std::string decoder_timings(const io::GpuJpegDecoder& decoder, double job_seconds) {
  if (!decoder.has_hardware()) return {};
  const io::GpuJpegDecoder::HardwareActivity activity = decoder.hardware_activity();
  const double files_per_batch =
      activity.batches > 0 ? static_cast<double>(activity.files) / static_cast<double>(activity.batches) : 0.0;
  char text[256];
  std::snprintf(text, sizeof text,
                "timings: hardware JPEG decoding: %llu batches of %.1f files on average, the %d lane(s) busy %.0f%% "
                "of the job",
                static_cast<unsigned long long>(activity.batches), files_per_batch, decoder.lanes(),
                100.0 * activity.busy_seconds / (decoder.lanes() * std::max(job_seconds, 1e-9)));
  return text;
}

std::string encoder_timings(const io::GpuJpegEncoder& encoder, double job_seconds) {
  char text[160];
  std::snprintf(text, sizeof text, "timings: GPU JPEG encoding: the %d encoder states busy %.0f%% of the job",
                encoder.states(), 100.0 * encoder.busy_seconds() / (encoder.states() * std::max(job_seconds, 1e-9)));
  return text;
}

}  // namespace imgpipe::app
