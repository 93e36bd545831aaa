// GPU tests skip, saying why, on a machine without a usable CUDA device.
#pragma once

#include "cuda_check.hpp"

#include <gtest/gtest.h>

#define SKIP_WITHOUT_DEVICE()             \
  if (!imgpipe::cuda::device_available()) \
  GTEST_SKIP() << "no usable CUDA device here; this GPU test needs one"
