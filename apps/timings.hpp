// --timings on batch and stream: where a job's time went, one line each, for the summary.
#pragma once

#include "gpu_jpeg.hpp"
#include "job.hpp"

#include <string>
#include <string_view>

namespace imgpipe::app {

// The mean time an item (`unit`: "image", "frame") spent in each stage of the job; empty for a job of no items.
std::string stage_timings(const JobSummary& summary, std::string_view unit);

// How busy the hardware JPEG decode lanes were over a job of `job_seconds`; empty without hardware lanes.
// `name_device`: the line names the decoder's device (a job with decoders on several).
std::string decoder_timings(const io::GpuJpegDecoder& decoder, double job_seconds, bool name_device = false);

// The process's CPU time so far, in seconds.
struct CpuTime {
  double user = 0;
  double system = 0;
};
CpuTime process_cpu_time();

// How many cores the process kept busy over a job of `job_seconds`, from its CPU time before and after.
std::string cpu_timings(const CpuTime& before, const CpuTime& after, double job_seconds);

// How busy the GPU JPEG encoder states were over a job of `job_seconds`. A codec busy for most of the job
// bounds it. `name_device` as for decoder_timings.
std::string encoder_timings(const io::GpuJpegEncoder& encoder, double job_seconds, bool name_device = false);

}  // namespace imgpipe::app
