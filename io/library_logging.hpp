// The libraries under io/ (OpenCV, and FFmpeg and GStreamer beneath its videoio) log warnings to stderr during
// normal runs; imgpipe keeps them quiet unless asked.
#pragma once

namespace imgpipe::io {

// verbose = false: nothing from the libraries reaches stderr (imgpipe reports every failure in its own words);
// true: their errors and warnings do.
// Call before the first codec is used.
void set_library_logging(bool verbose);

}  // namespace imgpipe::io
