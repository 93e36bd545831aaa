// A build without libavformat: containers reach the CPU decoder only.
#include "video_demux.hpp"

namespace imgpipe::io {

std::string container_demuxing_unavailable() {
  return "this build has no libavformat to demux containers (install libavformat-dev and rebuild)";
}

std::unique_ptr<Bitstream> open_container(const std::filesystem::path& path) {
  throw IoError(path, container_demuxing_unavailable());
}

void set_demuxer_logging(bool) {}

}  // namespace imgpipe::io
