// What FFmpeg's libraries log about one video reader's demuxer and decoder. They report damage only through
// av_log: a demuxer that meets the end of a file cut short ("File ended prematurely", "partial file") logs an
// error and then ends the stream as if it were whole; a decoder's frame threads log the errors and concealment
// of the pictures they decode. Only files built with FFmpeg include this.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <cstdarg>
#include <cstdint>
#include <set>
#include <string>

namespace imgpipe::io::libav {

class ReaderLog {
 public:
  ReaderLog();
  ~ReaderLog();
  ReaderLog(const ReaderLog&) = delete;
  ReaderLog& operator=(const ReaderLog&) = delete;

  // Sets the log callback again: OpenCV sets its own when it opens a video.
  static void listen();

  // Routes `demuxer`'s messages here (its opaque pointer; set it before avformat_open_input, which logs too).
  void watch(AVFormatContext& demuxer);
  // Routes `decoder`'s messages here, by packet number (reordered_opaque, which libavcodec copies into the
  // thread context decoding the packet and into the frames it starts): a frame thread hands out pictures with
  // decode_error_flags copied before another thread concealed their damage, so its log is the reliable record.
  void watch(AVCodecContext& decoder);

  // Whether the decoder logged an error or concealment while decoding `packet`; forgets it.
  bool take_damaged_packet(std::int64_t packet);
  // The first error the demuxer logged, empty where it logged none.
  std::string demuxer_error() const;

 private:
  static void log(void* object, int level, const char* format, va_list arguments);

  std::set<std::int64_t> damaged_packets_;  // under the log's mutex
  std::string demuxer_error_;               // under the log's mutex
};

}  // namespace imgpipe::io::libav
