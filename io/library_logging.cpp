#include "library_logging.hpp"

#include "video_demux.hpp"
#include "video_encode.hpp"

#include <cstdlib>

#ifdef IMGPIPE_HAVE_OPENCV
#include <opencv2/core/utils/logger.hpp>
#endif

namespace imgpipe::io {

void set_library_logging(bool verbose) {
  // GStreamer reads its level from the environment when OpenCV first loads it; an explicit GST_DEBUG wins.
  ::setenv("GST_DEBUG", verbose ? "2" : "0", /*overwrite=*/0);
  // OpenCV's FFmpeg backend sets FFmpeg's log level from this when it loads: AV_LOG_WARNING, or AV_LOG_QUIET.
  ::setenv("OPENCV_FFMPEG_LOGLEVEL", verbose ? "24" : "-8", /*overwrite=*/0);
#ifdef IMGPIPE_HAVE_OPENCV
  // OpenCV's own messages, and those its videoio backends pass on from FFmpeg and GStreamer. Quiet means silent:
  // its "errors" are mostly backends failing over to the next one, and imgpipe reports every failure itself.
  cv::utils::logging::setLogLevel(verbose ? cv::utils::logging::LOG_LEVEL_WARNING
                                          : cv::utils::logging::LOG_LEVEL_SILENT);
#endif
  set_demuxer_logging(verbose);
  set_encoder_logging(verbose);
}

}  // namespace imgpipe::io
