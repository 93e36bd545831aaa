#include "image_folder.hpp"

#include "device_error.hpp"
#include "device_resources.hpp"
#include "folder.hpp"
#include "image_file.hpp"
#include "image_header.hpp"
#include "io_error.hpp"

#include <iterator>
#include <map>
#include <new>
#include <stdexcept>

namespace imgpipe::io {
namespace {

namespace fs = std::filesystem;

fs::path resolved(const fs::path& path) { return fs::weakly_canonical(fs::absolute(path)); }

// The first folder on `relative`'s way from `root` (its components but the last) that is a symbolic link, as
// root / those components; empty where there is none.
fs::path folder_link_on(const fs::path& root, const fs::path& relative) {
  fs::path folder = root;
  for (auto part = relative.begin(); part != relative.end() && std::next(part) != relative.end(); ++part) {
    folder /= *part;
    std::error_code error;
    if (fs::is_symlink(fs::symlink_status(folder, error))) return folder;
  }
  return {};
}

// Whether `path` is `folder` or lies inside it, by the folders' identity (device and inode) rather than their
// names: a link resolves to the folder it points at, and a bind mount of `folder` is `folder`.
bool lies_in(const fs::path& path, const fs::path& folder) {
  std::error_code error;
  for (fs::path at = resolved(path);; at = at.parent_path()) {
    if (fs::equivalent(at, folder, error)) return true;
    if (at == at.parent_path()) return false;
  }
}

}  // namespace

void check_folders(const fs::path& input_dir, const fs::path& output_dir) {
  const fs::path input = resolved(input_dir), output = resolved(output_dir);
  if (lies_in(output, input)) {
    throw std::invalid_argument("the output folder '" + output_dir.string() + "' is the input folder '" +
                                input_dir.string() + "' or inside it; choose one outside it so outputs never mix "
                                "with inputs");
  }
  if (lies_in(input, output)) {
    throw std::invalid_argument("the input folder '" + input_dir.string() + "' is inside the output folder '" +
                                output_dir.string() + "'; choose folders side by side so outputs never mix with "
                                "inputs");
  }
}

namespace {

// One plan per entry, appended to `plans` in the entries' order.
void plan_entries(const fs::path& input_dir, const std::vector<FolderEntry>& entries, const fs::path& output_dir,
                  std::string_view format, ExistingOutputs existing, std::string_view existing_hint,
                  std::vector<FilePlan>& plans) {
  const fs::path output_root = resolved(output_dir);
  std::map<std::string, std::string> first_input_for_output;  // resolved output -> input
  std::map<std::string, std::string> first_input_for_folder;  // resolved folder an output goes in -> input
  std::vector<std::pair<std::size_t, std::string>> planned;   // plans to be written, with their resolved output
  for (const FolderEntry& entry : entries) {
    fs::path relative_output = entry.relative;
    if (format != "same") relative_output.replace_extension(format);
    FilePlan plan{(input_dir / entry.relative).string(), (output_dir / relative_output).string(), {}};
    if (!entry.problem.empty()) {
      plan.refusal = entry.problem;
      plans.push_back(std::move(plan));
      continue;
    }
    const fs::path output = (output_root / relative_output).lexically_normal();
    const auto [claimed, fresh] = first_input_for_output.emplace(output.string(), plan.input);
    std::error_code error;
    const fs::file_status found = fs::symlink_status(plan.output, error);
    if (!fresh) {
      plan.refusal = "its output " + plan.output + " is already made from " + claimed->second;
    } else if (fs::is_directory(found)) {
      plan.refusal = "its output " + plan.output + " is a folder";
    } else if (existing != ExistingOutputs::overwrite && fs::exists(found)) {
      if (existing == ExistingOutputs::skip) {
        plan.skip = true;
      } else {
        plan.refusal = "output " + plan.output + " exists; " + std::string(existing_hint);
      }
    } else {
      for (fs::path folder = output.parent_path(); folder != output_root && is_within(folder, output_root);
           folder = folder.parent_path()) {
        first_input_for_folder.emplace(folder.string(), plan.input);
      }
      planned.emplace_back(plans.size(), output.string());
    }
    plans.push_back(std::move(plan));
  }
  // An output file whose name another output needs as its folder (x.jpg and x.png/y.png, both as png).
  for (const auto& [index, output] : planned) {
    if (const auto folder = first_input_for_folder.find(output); folder != first_input_for_folder.end()) {
      plans[index].refusal =
          "its output " + plans[index].output + " is the folder the output of " + folder->second + " goes in";
    }
  }
}

}  // namespace

FolderPlan plan_outputs(const fs::path& input_dir, const fs::path& output_dir, std::string_view format,
                        ExistingOutputs existing, bool follow_links, std::string_view existing_hint) {
  const FolderListing listing = list_folder(input_dir, {follow_links, output_dir});
  FolderPlan folder{{}, input_dir, listing.unsupported, listing.links_not_followed, listing.unfinished_outputs};
  plan_entries(input_dir, listing.entries, output_dir, format, existing, existing_hint, folder.files);
  return folder;
}

namespace {

// One entry per chosen path, refused where the path is absolute or leads out of input_dir, and, where the input
// folder is here (`on_disk`), where it goes through a link to a folder.
std::vector<FolderEntry> chosen_entries(const fs::path& input_dir, const std::vector<fs::path>& relative_paths,
                                        bool on_disk) {
  std::vector<FolderEntry> entries;
  entries.reserve(relative_paths.size());
  for (const fs::path& relative : relative_paths) {
    FolderEntry entry{relative, {}};
    const fs::path normal = relative.lexically_normal();
    if (relative.is_absolute() || normal.empty() || normal == "." || *normal.begin() == "..") {
      entry.problem =
          (on_disk ? "not a path inside the input folder " : "not a path under the input prefix ") + input_dir.string();
    } else if (!normal.has_filename()) {
      entry.problem = "names a folder (it ends in a slash), not an image file";
    } else if (const fs::path link = on_disk ? folder_link_on(input_dir, normal) : fs::path(); !link.empty()) {
      entry.problem = "not a path inside the input folder " + input_dir.string() + ": it goes through " +
                      link.string() + ", a link to a folder (the folder's listing does not follow those)";
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace

FolderPlan plan_files(const fs::path& input_dir, const std::vector<fs::path>& relative_paths,
                      const fs::path& output_dir, std::string_view format, ExistingOutputs existing,
                      std::string_view existing_hint) {
  FolderPlan folder;
  folder.input_dir = input_dir;
  plan_entries(input_dir, chosen_entries(input_dir, relative_paths, true), output_dir, format, existing,
               existing_hint, folder.files);
  return folder;
}

FolderPlan plan_remote_files(const fs::path& input_prefix, const std::vector<fs::path>& relative_paths,
                             const fs::path& output_dir, std::string_view format, ExistingOutputs existing,
                             std::string_view existing_hint) {
  FolderPlan folder;
  plan_entries(input_prefix, chosen_entries(input_prefix, relative_paths, false), output_dir, format, existing,
               existing_hint, folder.files);
  return folder;
}

void keep_shard(FolderPlan& plan, const fs::path& input_dir, int index, int count) {
  if (count < 1 || index < 0 || index >= count) {
    throw std::invalid_argument("shard " + std::to_string(index) + "/" + std::to_string(count) +
                                ": expected K/N with 0 <= K < N");
  }
  const auto shard_of = [&](const FilePlan& file) {
    std::uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
    for (const unsigned char c : fs::path(file.input).lexically_relative(input_dir).generic_string()) {
      hash = (hash ^ c) * 1099511628211ull;
    }
    return static_cast<int>(hash % static_cast<std::uint64_t>(count));
  };
  std::erase_if(plan.files, [&](const FilePlan& file) { return shard_of(file) != index; });
}

ImageFolderSource::ImageFolderSource(const FolderPlan& plan, const Chain& chain, std::uint64_t max_pixels,
                                     const GpuJpegDecoders* gpu_decoders)
    : plan_(plan), chain_(chain), max_pixels_(max_pixels), gpu_decoders_(gpu_decoders) {}

std::optional<Item> ImageFolderSource::next() {
  if (next_ == plan_.files.size()) return std::nullopt;
  const FilePlan& file = plan_.files[next_];
  Item item{next_++, file.input, {}, file.skip, std::nullopt};
  if (!file.refusal.empty()) item.refusal = "not processed: " + file.refusal;
  return item;
}

void ImageFolderSource::check_chain_limit(Size size) const {
  const Size largest = largest_frame(chain_, size);
  if (largest.pixels() > max_pixels_) {
    throw PixelLimitError("the chain makes a " + to_string(largest) + " frame (" + std::to_string(largest.pixels()) +
                          " pixels) from this " + to_string(size) + " image, more than the limit of " +
                          std::to_string(max_pixels_) + " pixels");
  }
}

std::vector<std::string> ImageFolderSource::read(const Item& item, const FrameAllocator& allocate) {
  const fs::path path = plan_.files[item.index].input;
  const std::vector<std::uint8_t> bytes = read_file(path, max_image_file_bytes(max_pixels_));
  std::vector<std::string> warnings = decode_file_bytes(
      path, bytes,
      [&](Size size) {
        check_chain_limit(size);
        return allocate(size);
      },
      max_pixels_);
  if (looks_like_jpeg(bytes)) count(JpegDecoder::cpu);
  return warnings;
}

std::vector<std::string> ImageFolderSource::read_on_device(const Item& item, const FrameAllocator& allocate,
                                                           const DeviceFrameAllocator& allocate_on_device,
                                                           int device) {
  if (!gpu_decoders_) return read(item, allocate);
  const fs::path path = plan_.files[item.index].input;
  const std::vector<std::uint8_t> bytes = read_file(path, max_image_file_bytes(max_pixels_));
  const auto on_host = [&](Size size) {
    check_chain_limit(size);
    return allocate(size);
  };
  if (!looks_like_jpeg(bytes)) return decode_file_bytes(path, bytes, on_host, max_pixels_);
  // A truncated file is refused as the CPU decoder refuses it, not decoded into a partly grey frame.
  const ImageHeader header = read_image_header(bytes);
  if (!header.truncated.empty()) throw IoError(path, header.truncated);

  DeviceFrame frame;
  try {
    count(gpu_decoders_->on(device).decode(
        bytes,
        [&](Size size) {
          check_chain_limit(size);
          frame = allocate_on_device(size);
          return frame;
        },
        max_pixels_, header.orientation));
    return {};
  } catch (const PixelLimitError& e) {
    if (!e.path().empty()) throw;
    throw PixelLimitError(path, e.reason());
  } catch (const GpuJpegRefusal& refusal) {
    try {
      std::vector<std::string> warnings;
      if (!refusal.allocated()) {
        warnings = decode_file_bytes(path, bytes, on_host, max_pixels_);
      } else {
        // The frame already waits on the device: decode on the host, then upload into it.
        Image decoded;
        warnings = decode_file_bytes(
            path, bytes,
            [&](Size size) {
              if (size != frame.size) {
                throw IoError("the CPU decoder makes a " + to_string(size) + " image, the GPU's header read " +
                              to_string(frame.size));
              }
              decoded = Image(size);
              return decoded.view();
            },
            max_pixels_);
        check_device(cudaMemcpyAsync(frame.data, decoded.data(), decoded.bytes(), cudaMemcpyHostToDevice,
                                     frame.stream),
                     "cudaMemcpyAsync");
        check_device(cudaStreamSynchronize(frame.stream), "cudaStreamSynchronize");
      }
      count(JpegDecoder::cpu);
      return warnings;
    } catch (const IoError& e) {
      throw IoError(path, e.reason() + " (the GPU JPEG decoders refused it too: " + refusal.what() + ")");
    }
  }
}

std::array<std::uint64_t, 3> ImageFolderSource::jpeg_decoders() const {
  return {decoded_by_[0].load(), decoded_by_[1].load(), decoded_by_[2].load()};
}

std::string failure_message(const ItemResult& result, std::string_view limit_hint) {
  const std::string& input = result.item.name;
  switch (result.status) {
    case ItemResult::Status::refused: return input + ": " + result.item.refusal;
    case ItemResult::Status::abandoned: return input + ": not processed: the GPU failed on an earlier file";
    default: break;
  }
  try {
    std::rethrow_exception(result.error);
  } catch (const PixelLimitError& e) {
    return std::string(e.what()) + std::string(limit_hint);
  } catch (const IoError& e) {
    return e.path().empty() ? input + ": " + e.what() : e.what();
  } catch (const DeviceOutOfMemory& e) {
    return input + ": not enough GPU memory for this " + to_string(result.size) + " image (" + e.what() +
           "); skipped, the batch goes on";
  } catch (const std::bad_alloc&) {
    return input + ": not enough host memory for this " + to_string(result.size) + " image";
  } catch (const std::exception& e) {
    return input + ": " + e.what();
  }
}

ImageFolderSink::ImageFolderSink(const FolderPlan& plan, int quality, Existing existing,
                                 const GpuJpegEncoders* gpu_encoders)
    : plan_(plan), quality_(quality), existing_(existing), gpu_encoders_(gpu_encoders) {}

namespace {

// The folder `output` goes in, created.
// The folder `output` goes in: its parent, or the working folder for a bare name.
fs::path folder_of(const fs::path& output) { return output.has_parent_path() ? output.parent_path() : fs::path("."); }

void create_folder(const fs::path& folder) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) throw IoError(folder, "cannot create the folder: " + error.message());
}

// A link (or a mount) inside the output folder can lead back into the input folder, past check_folders.
void check_outside_input(const fs::path& output, const fs::path& folder, const fs::path& input_dir) {
  if (input_dir.empty() || !lies_in(folder, input_dir)) return;
  throw IoError(output, "not written: its folder " + folder.string() + " leads into the input folder " +
                            input_dir.string() + " (through a link or a mount), and outputs never go among the inputs");
}

// The folder `output` goes in, checked not to lead into input_dir before anything is made there (lies_in resolves
// the part that exists), then created, and checked again: a link may have appeared meanwhile.
fs::path create_output_folder(const fs::path& output, const fs::path& input_dir) {
  const fs::path folder = folder_of(output);
  check_outside_input(output, folder, input_dir);
  create_folder(folder);
  check_outside_input(output, folder, input_dir);
  return folder;
}

}  // namespace

void write_output_file(const fs::path& output, std::span<const std::uint8_t> bytes, const fs::path& input_dir,
                       Existing existing) {
  std::error_code error;
  if (!output.has_filename() || fs::is_directory(fs::symlink_status(output, error))) {
    throw IoError(output, "not written: it is a folder, not a file");
  }
  create_output_folder(output, input_dir);
  write_file_atomically(output, bytes, existing);
}

fs::path ImageFolderSink::prepare_output(const Item& item) {
  const fs::path output = plan_.files[item.index].output;
  const fs::path folder = folder_of(output);
  {
    const std::lock_guard lock(checked_mutex_);
    if (!checked_folders_.contains(folder.native())) {
      create_output_folder(output, plan_.input_dir);
      checked_folders_.insert(folder.native());
      return output;
    }
  }
  create_folder(folder);  // checked before; made again where something removed it since
  return output;
}

void ImageFolderSink::write(const Item& item, ConstFrameView frame) {
  write_image(prepare_output(item), frame, quality_, existing_);
}

bool ImageFolderSink::writes_from_device(const Item& item) const {
  if (!gpu_encoders_) return false;
  const std::string extension = lowercase_extension(plan_.files[item.index].output);
  return extension == ".jpg" || extension == ".jpeg";
}

void ImageFolderSink::write_from_device(const Item& item, DeviceFrame frame) {
  const fs::path output = prepare_output(item);
  write_file_atomically(output, gpu_encoders_->on(frame.device).encode(frame), existing_);
  gpu_encoded_.fetch_add(1);
}

}  // namespace imgpipe::io
