// The chain on OpenCV's own CPU functions (cv::resize, cv::GaussianBlur, ...): the fallback on machines
// without a GPU and a peer in comparisons. Built only when OpenCV is found.
#pragma once

#include "backend.hpp"

#include <memory>
#include <string>

namespace imgpipe {

std::unique_ptr<Backend> make_cpu_backend();

// What the CPU backend runs on, for `imgpipe backends`: the OpenCV version and its thread count.
std::string cpu_backend_description();

}  // namespace imgpipe
