// A folder of images as a job: where each input's output goes, the checks that keep inputs safe from the
// outputs, and the Source and Sink that read and write the files (imgpipe batch, the Python API's run_folder).
#pragma once

#include "chain.hpp"
#include "file_bytes.hpp"
#include "gpu_jpeg.hpp"
#include "job.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace imgpipe::io {

// Paths are kept as strings: a std::filesystem::path also keeps a list of its components, several times the
// string's size, and a plan holds every file of the folder at once.
struct FilePlan {
  std::string input;   // input folder / relative path
  std::string output;  // output folder / relative path, extension per format
  std::string refusal;           // why this file will not be written (a failure), or empty
  bool skip = false;             // its output exists and existing outputs are skipped (not a failure)
};

// What to do with an output that already exists.
enum class ExistingOutputs {
  refuse,     // the default: report the file as failed, keep the output
  overwrite,  // replace it (once the new one is complete)
  skip,       // count the file as skipped, keep the output (resumes an interrupted batch)
};

// Throws std::invalid_argument when the output folder is the input folder, lies inside it, or holds it
// (outputs would become inputs, or land among them). Links are resolved first, and folders compared by identity
// too, so that a bind mount of a folder counts as the folder.
void check_folders(const std::filesystem::path& input_dir, const std::filesystem::path& output_dir);

// One plan per image under input_dir, in sorted order. `format` is "same" or an extension without its dot.
// A file is refused (not failed silently) when its output exists and `existing` is refuse, or when another
// input already maps to the same output. Entries named like images that cannot be read as files (folders,
// broken links, FIFOs...) and folders that cannot be listed get a plan too, refused with the reason, so the
// batch reports them.
// With `follow_links`, folders reached through links are walked too (see FolderWalk; never into the output
// folder). Also counts what the walk passed over: files that are not images, links to folders not followed.
struct FolderPlan {
  std::vector<FilePlan> files;
  std::filesystem::path input_dir;  // where the inputs are: no output is written inside it
  std::size_t unsupported = 0;
  std::size_t links_not_followed = 0;
  std::size_t unfinished_outputs = 0;
};
// How to get past an existing output, in the words of the command's options; the Python module passes its own.
inline constexpr std::string_view kExistingOutputHint = "--overwrite replaces it, --skip-existing skips it";
FolderPlan plan_outputs(const std::filesystem::path& input_dir, const std::filesystem::path& output_dir,
                        std::string_view format, ExistingOutputs existing, bool follow_links = false,
                        std::string_view existing_hint = kExistingOutputHint);

// The same plans for a chosen list of files under input_dir, given relative to it (as list_folder lists them):
// one batch of a distributed job whose driver listed the folder once. A path that is absolute or leads out of
// input_dir is refused with the reason; a file that cannot be read fails when it is read, by name.
FolderPlan plan_files(const std::filesystem::path& input_dir, const std::vector<std::filesystem::path>& relative_paths,
                      const std::filesystem::path& output_dir, std::string_view format, ExistingOutputs existing,
                      std::string_view existing_hint = kExistingOutputHint);

// plan_files for files that are not in a folder here but named under a prefix elsewhere (objects under an
// object-store URL that a distributed job reads): only the outputs' rules apply. A path that is absolute or leads
// out of the prefix is still refused (its output would leave output_dir); the plan's input_dir is empty, as there
// is no folder to keep the outputs out of.
FolderPlan plan_remote_files(const std::filesystem::path& input_prefix,
                             const std::vector<std::filesystem::path>& relative_paths,
                             const std::filesystem::path& output_dir, std::string_view format, ExistingOutputs existing,
                             std::string_view existing_hint = kExistingOutputHint);

// One of `count` shards of a folder's files, for running a batch as N independent copies (a Slurm job array, a
// Kubernetes Indexed Job) with no coordinator and no overlap: keeps the files whose relative path hashes
// (64-bit FNV-1a) to `index` modulo `count`. A file's shard depends on its path alone, so adding files to the
// folder never moves another file to a different shard. 0 <= index < count.
void keep_shard(FolderPlan& plan, const std::filesystem::path& input_dir, int index, int count);

// The planned files, decoded on several threads at once straight into the engine's slots. A file whose header
// declares more than `max_pixels`, or from which the chain makes a larger frame, is refused before the engine
// allocates for it (PixelLimitError).
// With GPU JPEG decoders (one per device the engine runs on) and an engine that keeps frames on the device, JPEG
// files are decoded on the GPU into the slots' device inputs, each by its slot's device's decoder; what the GPU
// decoders refuse, and every other format, is decoded on the CPU.
class ImageFolderSource final : public Source {
 public:
  ImageFolderSource(const FolderPlan& plan, const Chain& chain, std::uint64_t max_pixels,
                    const GpuJpegDecoders* gpu_decoders = nullptr);
  std::optional<Item> next() override;
  std::vector<std::string> read(const Item& item, const FrameAllocator& allocate) override;
  std::vector<std::string> read_on_device(const Item& item, const FrameAllocator& allocate,
                                          const DeviceFrameAllocator& allocate_on_device, int device) override;
  bool concurrent_reads() const override { return true; }

  // JPEG files decoded so far by each decoder (JpegDecoder's order); other formats are not counted.
  std::array<std::uint64_t, 3> jpeg_decoders() const;

 private:
  // Refuses a frame from which the chain makes one over the pixel limit, before anything is allocated.
  void check_chain_limit(Size size) const;
  void count(JpegDecoder decoder) { decoded_by_[static_cast<std::size_t>(decoder)].fetch_add(1); }

  const FolderPlan& plan_;
  Chain chain_;
  std::uint64_t max_pixels_;
  const GpuJpegDecoders* gpu_decoders_;
  std::size_t next_ = 0;
  std::array<std::atomic<std::uint64_t>, 3> decoded_by_{};
};

// One line naming the file and what went wrong with it, for an item of an image folder job that did not
// finish (refused, failed or abandoned). `limit_hint` follows a pixel-limit refusal: how to raise the limit.
std::string failure_message(const ItemResult& result, std::string_view limit_hint);

// One planned output whose bytes are already encoded (a distributed job's worker), written as ImageFolderSink
// writes it: its folder created, and checked not to lead into `input_dir` (through a link or a mount inside the
// output folder; an empty input_dir checks nothing), then write_file_atomically. Throws IoError naming `output`.
void write_output_file(const std::filesystem::path& output, std::span<const std::uint8_t> bytes,
                       const std::filesystem::path& input_dir, Existing existing);

// Each item's output to its planned path, encoded on several threads at once, written atomically (a temporary
// name, renamed once complete); with Existing::keep an existing file is never replaced.
// With GPU JPEG encoders (one per device the engine runs on), JPEG outputs are encoded on the GPU from the slots'
// device outputs, each by its device's encoder.
class ImageFolderSink final : public Sink {
 public:
  ImageFolderSink(const FolderPlan& plan, int quality, Existing existing,
                  const GpuJpegEncoders* gpu_encoders = nullptr);
  void write(const Item& item, ConstFrameView frame) override;
  bool writes_from_device(const Item& item) const override;
  void write_from_device(const Item& item, DeviceFrame frame) override;
  bool concurrent_writes() const override { return true; }

  std::uint64_t gpu_encoded() const { return gpu_encoded_.load(); }

 private:
  // The item's output path, its folder created. Throws IoError where that folder leads into the input folder.
  std::filesystem::path prepare_output(const Item& item);

  const FolderPlan& plan_;
  std::mutex checked_mutex_;                         // writers prepare outputs on several threads
  std::unordered_set<std::string> checked_folders_;  // output folders known to lie outside the input folder
  int quality_;
  Existing existing_;
  const GpuJpegEncoders* gpu_encoders_;
  std::atomic<std::uint64_t> gpu_encoded_ = 0;
};

}  // namespace imgpipe::io
