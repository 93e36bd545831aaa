// Frame streams for `imgpipe stream`: raw rgb24 (what `ffmpeg -f rawvideo -pix_fmt rgb24` reads and writes)
// on any file descriptor, and video files through FFmpeg's libraries or OpenCV's VideoCapture / VideoWriter,
// whichever the build has; and the Source and Sink that run a stream as a job.
#pragma once

#include "chain.hpp"
#include "file_bytes.hpp"
#include "gpu_jpeg.hpp"
#include "io_error.hpp"
#include "job.hpp"
#include "ppm.hpp"
#include "rgb_color_space.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace imgpipe::io {

// Reads frames one at a time, each into a buffer someone else lends.
class FrameReader {
 public:
  virtual ~FrameReader() = default;
  // Size of the next frame, or nullopt at the end.
  virtual std::optional<Size> next_size() = 0;
  // Reads the frame whose size next_size() just gave into `frame`.
  virtual void read(FrameView frame) = 0;
  // True when the frames are decoded on the GPU, so read_to_device() is the way in where the engine keeps
  // frames on the device.
  virtual bool decodes_on_device() const { return false; }
  // Like read(), into a device frame: complete on return.
  virtual void read_to_device(const DeviceFrame& frame);
  // Frames per second the input declares, or nullopt when it declares none.
  virtual std::optional<double> frame_rate() const { return std::nullopt; }
  // How many frames the input holds, as its container counts them or its length and rate imply, for a
  // progress line; nullopt where it does not say.
  virtual std::optional<std::uint64_t> frames_expected() const { return std::nullopt; }
  // When the frame next_size() announced is shown, in seconds, where the input says (a container's
  // timestamps); nullopt for inputs without timing, whose frames are 1 / frame_rate() apart.
  virtual std::optional<double> frame_time() const { return std::nullopt; }
  // Frames that came out of the decoder damaged (concealed), and their positions for messages, from 0.
  virtual std::vector<std::uint64_t> corrupt_frames() const { return {}; }
  // The first error the container's demuxer reported (a file cut short, damaged packets it skipped), empty where
  // it reported none: frames may be missing even though every frame read decoded cleanly.
  virtual std::string container_damage() const { return {}; }
  // The shape the frames are shown in where their pixels are not square (an anamorphic video), upright;
  // nullopt for square pixels or where the input does not say.
  virtual std::optional<DisplayAspect> display_aspect() const { return std::nullopt; }
  // The RGB colour space the frames are in, as the input declares it; nullopt where it does not.
  virtual std::optional<RgbColorSpace> rgb_color_space() const { return std::nullopt; }
  // Which decoder reads the frames, for the summary.
  virtual std::string decoder() const { return "CPU"; }
};

class FrameWriter {
 public:
  virtual ~FrameWriter() = default;
  // `time`: when the stream shows the frame, in seconds, where the reader knew it (FrameReader::frame_time).
  virtual void write(ConstFrameView frame, std::optional<double> time) = 0;
  // Completes the output after the last frame; throws when it could not be completed. A file writer destroyed
  // without close() leaves nothing under its name.
  virtual void close() {}
  // What became of the input's audio, for the summary ("audio copied (aac)", "audio not carried: ..."); empty
  // where there was none, or none was asked for.
  virtual std::string audio() const { return {}; }
  // What of the input's display tags (VideoDisplayTags: a pixel shape that is not square, a colour space) the
  // output does not declare, for the summary; empty where it declares them all.
  virtual std::string tags_not_declared() const { return {}; }
};

// Thrown by a reader whose cancel descriptor became readable (imgpipe stream after SIGINT/SIGTERM).
class StreamCancelled : public IoError {
 public:
  using IoError::IoError;
};

// Fixed-size rgb24 frames back to back. Reads straight into the engine's buffer (no extra copy).
// A stream that ends inside a frame is an error naming the frame, never a silent drop.
// With `cancel_fd` >= 0, every read waits on `fd` and `cancel_fd` together, and once `cancel_fd` is readable
// the reader throws StreamCancelled instead of blocking (a stalled producer cannot keep a stopped run alive).
class RawFrameReader final : public FrameReader {
 public:
  RawFrameReader(int fd, Size frame_size, std::string name, int cancel_fd = -1);
  std::optional<Size> next_size() override;
  void read(FrameView frame) override;
  std::string decoder() const override { return "raw rgb24"; }
  std::uint64_t frames_read() const { return frames_; }

 private:
  // Reads up to `bytes`; returns how many arrived before end of stream.
  std::size_t read_some(std::uint8_t* dst, std::size_t bytes);

  int fd_;
  Size size_;
  std::string name_;
  int cancel_fd_;
  std::uint64_t frames_ = 0;
  std::optional<std::uint8_t> lookahead_;  // one byte read to learn whether another frame follows
};

class RawFrameWriter final : public FrameWriter {
 public:
  RawFrameWriter(int fd, std::string name);
  void write(ConstFrameView frame, std::optional<double> time) override;

 private:
  int fd_;
  std::string name_;
};

// The file a video input names: FFmpeg opens a file: URL as the path after "file:" (file:///v.mp4 is ///v.mp4);
// any other name is its own path.
std::filesystem::path local_file_named(const std::string& input);
// Whether FFmpeg takes `input` for a URL: a name that is no existing file and starts with a protocol's scheme
// (rtsp:, tcp:, file:, pipe:, ...).
bool names_a_url(const std::string& input);

// Opens a video file for decoding on the CPU: through FFmpeg's libraries where the build has them (each frame
// with its time, damaged frames named: open_ffmpeg_video_reader, cpu_video.hpp), else OpenCV's VideoCapture
// (frames 1 / fps apart). Throws IoError when it cannot be opened or the build has neither, and
// PixelLimitError when the size the container declares exceeds `max_pixels` (before a frame is decoded).
// Every frame must have the first frame's size (an error names the frame otherwise). `cancel_fd`: as
// open_ffmpeg_video_reader's (OpenCV's reader cannot give up a read).
std::unique_ptr<FrameReader> open_video_reader(const std::filesystem::path& path,
                                               std::uint64_t max_pixels = kDefaultMaxPixels, int cancel_fd = -1);
// Frames per second the file declares, or nullopt when it declares none.
std::optional<double> video_fps(const std::filesystem::path& path);
// The frame rates a video is written at (a rate without a time, or a default): above the highest the file is
// one that players refuse or misplay; below the lowest (a frame every 1000 s) a frame's length leaves the writer's
// clock.
constexpr double kMinFps = 0.001;
constexpr double kMaxFps = 1000;
// The video files imgpipe writes, by lowercase extension: .mp4, .mkv, .mov and .avi.
inline bool is_video_output_extension(std::string_view extension) {
  return extension == ".mp4" || extension == ".mkv" || extension == ".mov" || extension == ".avi";
}
// What a video file output declares about showing its frames, carried over from the video they were decoded from:
// the shape an anamorphic video is shown in (its pixels' aspect follows from it), and the RGB colour space.
struct VideoDisplayTags {
  std::optional<DisplayAspect> shown_as;
  std::optional<RgbColorSpace> color_space;
};

// Writes frames of `size` under a temporary name in the same folder, then renames it to `path` (never over an
// existing file with Existing::keep). Any failure, at open, write or close, throws IoError naming `path` and the
// OS error where there is one; nothing is left under `path` and the temporary is removed. An .mp4, .mkv or .mov
// file in a build with FFmpeg's libraries keeps each frame's time (open_timed_video_writer, video_encode.hpp);
// otherwise OpenCV writes it at `fps` (constant frame rate; .mp4: mp4v, .avi: MJPG, .mkv: XVID), and close()
// checks that the finished file holds every frame. With `audio_from` (the video the frames come from), its sound
// is copied into the new file where the writer and the container can carry it (FFmpeg's), and audio() says
// what became of it. `tags` are declared by FFmpeg's writer; OpenCV's writes square pixels and no colour space,
// and its tags_not_declared() says so.
std::unique_ptr<FrameWriter> open_video_writer(const std::filesystem::path& path, Size size, double fps,
                                               Existing existing, const std::filesystem::path& audio_from = {},
                                               const VideoDisplayTags& tags = {});

// What encodes a video file of this name on the CPU, for the summary: "OpenCV", or the FFmpeg encoder that
// keeps each frame's time.
std::string video_writer_description(const std::filesystem::path& path);
// What encodes video files on the CPU, by extension, for `imgpipe backends`.
std::string video_writers_description();
// What decodes video files on the CPU, for `imgpipe backends`.
std::string video_readers_description();

// A video file opened at its first frame, once the chain's output size is known; otherwise open_video_writer's.
std::unique_ptr<FrameWriter> open_video_writer_at_first_frame(const std::filesystem::path& path, double fps,
                                                              Existing existing,
                                                              const std::filesystem::path& audio_from = {},
                                                              const VideoDisplayTags& tags = {});

// A frame stream as a job's source, one frame after another: every frame must have the first frame's size (a
// video's output has one size) and stay within `max_pixels`, for the frame and every frame the chain makes
// from it; errors name the frame, counted from 0. A read cancelled between frames (StreamCancelled from
// next_size) ends the stream like its end.
class FrameStreamSource final : public Source {
 public:
  // With `keep_frame_times`, frame_times() lists every frame's time (a long stream's list grows with it).
  FrameStreamSource(FrameReader& reader, std::string name, const Chain& chain, std::uint64_t max_pixels,
                    bool keep_frame_times = false);
  std::optional<Item> next() override;
  std::vector<std::string> read(const Item& item, const FrameAllocator& allocate) override;
  // A GPU decoder's reader decodes on the device current when it was opened, which must be the engine's.
  std::vector<std::string> read_on_device(const Item& item, const FrameAllocator& allocate,
                                          const DeviceFrameAllocator& allocate_on_device, int device) override;
  std::uint64_t frames_read() const { return frames_read_; }
  // Each frame's time as the reader gave it (FrameReader::frame_time), in stream order, once the job is done;
  // empty unless kept.
  const std::vector<std::optional<double>>& frame_times() const { return frame_times_; }

 private:
  FrameReader& reader_;
  std::string name_;
  Chain chain_;
  std::uint64_t max_pixels_;
  std::optional<Size> first_, next_size_;
  std::uint64_t frames_read_ = 0;
  bool keep_frame_times_;
  std::vector<std::optional<double>> frame_times_;
};

// The times of a stream's first `frames` frames in milliseconds, in mkvmerge's "timestamp format v2" (a header
// line, then one time per frame), which `mkvmerge --timestamps 0:FILE` puts on a video of those frames. A frame
// without a time of its own is shown 1 / `fps` after the one before.
std::string timestamps_v2(const std::vector<std::optional<double>>& times, std::uint64_t frames, double fps);

// Each item's frame as an image file in `folder`, named by its frame number from 0 (000000.jpg, 000001.jpg...),
// encoded (on several threads at once where the job has them) and written atomically (write_image; with
// Existing::keep an existing file is an error, never replaced). With GPU JPEG encoders (one per device the
// engine runs on) and `extension` .jpg, frames are encoded on the GPU from the engine's device outputs. The
// folder is created, where missing, with the first frame written.
class ImageSequenceSink final : public Sink {
 public:
  ImageSequenceSink(std::filesystem::path folder, std::string extension, int quality, Existing existing,
                    const GpuJpegEncoders* gpu_encoders = nullptr);
  void write(const Item& item, ConstFrameView frame) override;
  bool writes_from_device(const Item&) const override { return gpu_encoders_ != nullptr; }
  void write_from_device(const Item& item, DeviceFrame frame) override;
  bool concurrent_writes() const override { return true; }

  // The file of frame `index` in `folder`, for files of `extension` (".jpg").
  static std::filesystem::path frame_path(const std::filesystem::path& folder, std::uint64_t index,
                                          const std::string& extension);
  // Whether a file name is one frame_path gives for `extension`.
  static bool is_frame_name(const std::string& name, const std::string& extension);

 private:
  void make_folder();

  std::filesystem::path folder_;
  std::string extension_;
  int quality_;
  Existing existing_;
  const GpuJpegEncoders* gpu_encoders_;
  std::mutex folder_mutex_;
  bool folder_made_ = false;
};

// Each item's frame to `writer`, in order; close() completes the writer.
class FrameStreamSink final : public Sink {
 public:
  explicit FrameStreamSink(FrameWriter& writer) : writer_(writer) {}
  void write(const Item& item, ConstFrameView frame) override { writer_.write(frame, item.time); }
  void close() override { writer_.close(); }

 private:
  FrameWriter& writer_;
};

}  // namespace imgpipe::io
