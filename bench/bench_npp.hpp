// NPP helpers for the sources in bench/ that call NPP themselves. NPP is a private dependency of imgpipe_bench,
// so only targets that link NPP and define IMGPIPE_HAVE_NPP see these (bench/CMakeLists.txt).
#pragma once

#ifdef IMGPIPE_HAVE_NPP

#include <cuda_runtime.h>
#include <npp.h>

namespace imgpipe::bench {

// Throws std::runtime_error naming `call` for a negative (error) status; warnings pass.
void check_npp(NppStatus status, const char* call);
// The stream context NPP's _Ctx functions take, for the current device and `stream`.
NppStreamContext npp_context(cudaStream_t stream);

}  // namespace imgpipe::bench

#endif
