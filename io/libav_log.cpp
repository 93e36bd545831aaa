#include "libav_log.hpp"

extern "C" {
#include <libavutil/log.h>
}

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_set>

namespace imgpipe::io::libav {
namespace {

std::mutex& logs_mutex() {
  static std::mutex shared;
  return shared;
}

std::unordered_set<const ReaderLog*>& live_logs() {  // under logs_mutex()
  static std::unordered_set<const ReaderLog*> live;
  return live;
}

}  // namespace

ReaderLog::ReaderLog() {
  listen();
  const std::lock_guard lock(logs_mutex());
  live_logs().insert(this);
}

ReaderLog::~ReaderLog() {
  const std::lock_guard lock(logs_mutex());
  live_logs().erase(this);
}

void ReaderLog::listen() { av_log_set_callback(&ReaderLog::log); }

void ReaderLog::watch(AVFormatContext& demuxer) { demuxer.opaque = this; }

void ReaderLog::watch(AVCodecContext& decoder) { decoder.opaque = this; }

bool ReaderLog::take_damaged_packet(std::int64_t packet) {
  const std::lock_guard lock(logs_mutex());
  return damaged_packets_.erase(packet) > 0;
}

std::string ReaderLog::demuxer_error() const {
  const std::lock_guard lock(logs_mutex());
  return demuxer_error_;
}

// Notes the errors of live logs' demuxers, and the errors and concealment (logged as information) of their
// decoders; prints every message as FFmpeg's default callback would.
void ReaderLog::log(void* object, int level, const char* format, va_list arguments) {
  const AVClass* kind = object != nullptr ? *static_cast<const AVClass* const*>(object) : nullptr;
  if (kind == avcodec_get_class() && (level <= AV_LOG_ERROR || (level == AV_LOG_INFO && format != nullptr &&
                                                                std::strncmp(format, "concealing ", 11) == 0))) {
    const auto* decoder = static_cast<const AVCodecContext*>(object);
    const std::lock_guard lock(logs_mutex());
    if (live_logs().contains(static_cast<const ReaderLog*>(decoder->opaque)) &&
        decoder->reordered_opaque != AV_NOPTS_VALUE) {
      static_cast<ReaderLog*>(decoder->opaque)->damaged_packets_.insert(decoder->reordered_opaque);
    }
  } else if (kind == avformat_get_class() && level <= AV_LOG_ERROR && format != nullptr) {
    const auto* demuxer = static_cast<const AVFormatContext*>(object);
    const std::lock_guard lock(logs_mutex());
    if (live_logs().contains(static_cast<const ReaderLog*>(demuxer->opaque))) {
      std::string& first_error = static_cast<ReaderLog*>(demuxer->opaque)->demuxer_error_;
      if (first_error.empty()) {
        char text[256];
        va_list copy;
        va_copy(copy, arguments);
        std::vsnprintf(text, sizeof text, format, copy);
        va_end(copy);
        first_error = text;
        while (!first_error.empty() && (first_error.back() == '\n' || first_error.back() == ' '))
          first_error.pop_back();
      }
    }
  }
  av_log_default_callback(object, level, format, arguments);
}

}  // namespace imgpipe::io::libav
