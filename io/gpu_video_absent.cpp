// GPU video in a build without nv-codec-headers: every stream is refused, and the reason says how to get it.
#include "gpu_video.hpp"

namespace imgpipe::io {

namespace {
constexpr const char* kNoNvdec =
    "this build has no NVDEC or NVENC support (CMake found no nv-codec-headers: install Debian's "
    "libffmpeg-nvenc-dev)";
}

std::string gpu_video_unavailable() { return kNoNvdec; }

int gpu_video_engines() { return 0; }

std::string nvenc_unavailable() { return kNoNvdec; }

std::vector<std::string> describe_gpu_video() {
  return {std::string("NVDEC: unavailable (") + kNoNvdec + ")",
          std::string("NVENC: unavailable (") + kNoNvdec + "); video files are written on the CPU (" +
              video_writers_description() + ")"};
}

std::unique_ptr<FrameReader> open_gpu_video_reader(const std::filesystem::path& path, const GpuVideoSplit&) {
  throw GpuVideoRefusal(path, kNoNvdec);
}

}  // namespace imgpipe::io
