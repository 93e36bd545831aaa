// What io/'s users of FFmpeg's libraries share (container_demux.cpp, video_encode.cpp; only files built with
// FFmpeg include it): an error code as text, and packets that free themselves.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
}

#include <memory>
#include <new>
#include <string>

namespace imgpipe::io::libav {

// FFmpeg's description of an AVERROR code.
inline std::string error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  return text;
}

struct PacketFree {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};
using Packet = std::unique_ptr<AVPacket, PacketFree>;

// An empty packet; throws std::bad_alloc when FFmpeg cannot allocate one.
inline Packet make_packet() {
  Packet packet(av_packet_alloc());
  if (!packet) throw std::bad_alloc();
  return packet;
}

}  // namespace imgpipe::io::libav
