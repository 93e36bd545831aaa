// A named NVTX range, open for the object's lifetime, so Nsight Systems shows what the host was doing (which
// frame it enqueued, where it waited for a slot or a result). nvtx3 is header-only: with no profiler attached
// a range costs a call that returns at once.
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace imgpipe::cuda {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace imgpipe::cuda
