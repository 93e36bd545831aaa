// libimgpipe_cuda_timeline.so: a timeline of what a CUDA program ran on the GPU, for machines without Nsight
// Systems. The CUDA driver loads it into any process through its injection hook:
//   CUDA_INJECTION64_PATH=build-gpu/bench/libimgpipe_cuda_timeline.so IMGPIPE_TIMELINE=run.timeline imgpipe ...
// CUPTI's activity API records every kernel (concurrent kernels kept concurrent), copy and memset with its GPU
// start and end; at exit the records go to $IMGPIPE_TIMELINE, one per line, times in ns on CUPTI's clock:
//   kernel START END STREAM NAME
//   copy START END STREAM KIND BYTES      (KIND: HtoD, DtoH, DtoD, HtoH, PtoP or other)
//   memset START END STREAM BYTES
// tools/timeline_summary.py says from it how busy the SMs and the copy engines were, and with what.
#include <cupti.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr std::size_t kBufferBytes = 8 << 20;

std::FILE* output = nullptr;

void CUPTIAPI give_buffer(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

const char* copy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "other";
  }
}

void write_record(const CUpti_Activity* record) {
  const auto ull = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      std::fprintf(output, "kernel %llu %llu %u %s\n", ull(k->start), ull(k->end), k->streamId,
                   k->name ? k->name : "?");
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      std::fprintf(output, "copy %llu %llu %u %s %llu\n", ull(c->start), ull(c->end), c->streamId,
                   copy_kind(c->copyKind), ull(c->bytes));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      std::fprintf(output, "memset %llu %llu %u %llu\n", ull(m->start), ull(m->end), m->streamId, ull(m->bytes));
      break;
    }
    default: break;
  }
}

// CUPTI calls this from its own thread, one buffer at a time.
void CUPTIAPI take_buffer(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) write_record(record);
  std::free(buffer);
}

void flush_at_exit() {
  cuptiActivityFlushAll(1);
  std::fclose(output);
}

bool enabled(CUptiResult result, const char* what) {
  if (result == CUPTI_SUCCESS) return true;
  const char* why = nullptr;
  cuptiGetResultString(result, &why);
  std::fprintf(stderr, "imgpipe_cuda_timeline: %s failed: %s\n", what, why ? why : "unknown error");
  return false;
}

}  // namespace

// The driver's injection entry point; 1 on success.
extern "C" int InitializeInjection() {
  const char* path = std::getenv("IMGPIPE_TIMELINE");
  if (!path) {
    std::fprintf(stderr, "imgpipe_cuda_timeline: set IMGPIPE_TIMELINE to the file to write\n");
    return 0;
  }
  output = std::fopen(path, "w");
  if (!output) {
    std::fprintf(stderr, "imgpipe_cuda_timeline: cannot write %s\n", path);
    return 0;
  }
  if (!enabled(cuptiActivityRegisterCallbacks(give_buffer, take_buffer), "cuptiActivityRegisterCallbacks") ||
      !enabled(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "recording kernels") ||
      !enabled(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "recording copies") ||
      !enabled(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "recording memsets")) {
    return 0;
  }
  std::atexit(flush_at_exit);
  return 1;
}
