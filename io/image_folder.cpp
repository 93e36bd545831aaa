#include "image_folder.hpp"

#include "device_error.hpp"
#include "folder.hpp"
#include "image_file.hpp"
#include "io_error.hpp"

#include <map>
#include <new>
#include <stdexcept>

namespace imgpipe::io {
namespace {

namespace fs = std::filesystem;

fs::path resolved(const fs::path& path) { return fs::weakly_canonical(fs::absolute(path)); }

}  // namespace

void check_folders(const fs::path& input_dir, const fs::path& output_dir) {
  const fs::path input = resolved(input_dir), output = resolved(output_dir);
  if (is_within(output, input)) {
    throw std::invalid_argument("the output folder '" + output_dir.string() + "' is the input folder '" +
                                input_dir.string() + "' or inside it; choose one outside it so outputs never mix "
                                "with inputs");
  }
  if (is_within(input, output)) {
    throw std::invalid_argument("the input folder '" + input_dir.string() + "' is inside the output folder '" +
                                output_dir.string() + "'; choose folders side by side so outputs never mix with "
                                "inputs");
  }
}

FolderPlan plan_outputs(const fs::path& input_dir, const fs::path& output_dir, std::string_view format,
                        ExistingOutputs existing, bool follow_links) {
  const fs::path output_root = resolved(output_dir);
  const FolderListing listing = list_folder(input_dir, {follow_links, output_dir});
  FolderPlan folder{{}, listing.unsupported, listing.links_not_followed};
  std::vector<FilePlan>& plans = folder.files;
  std::map<fs::path, fs::path> first_input_for_output;
  for (const FolderEntry& entry : listing.entries) {
    FilePlan plan{input_dir / entry.relative, output_dir / entry.relative, {}};
    if (!entry.problem.empty()) {
      plan.refusal = entry.problem;
      plans.push_back(std::move(plan));
      continue;
    }
    if (format != "same") plan.output.replace_extension(format);
    const fs::path output_resolved = output_root / plan.output.lexically_relative(output_dir);

    const auto [claimed, fresh] = first_input_for_output.emplace(output_resolved, plan.input);
    std::error_code error;
    if (!fresh) {
      plan.refusal = "its output " + plan.output.string() + " is already made from " + claimed->second.string();
    } else if (existing != ExistingOutputs::overwrite && fs::exists(fs::symlink_status(plan.output, error))) {
      if (existing == ExistingOutputs::skip) {
        plan.skip = true;
      } else {
        plan.refusal = "output " + plan.output.string() + " exists; --overwrite replaces it, --skip-existing skips it";
      }
    }
    plans.push_back(std::move(plan));
  }
  return folder;
}

void keep_shard(FolderPlan& plan, const fs::path& input_dir, int index, int count) {
  if (count < 1 || index < 0 || index >= count) {
    throw std::invalid_argument("shard " + std::to_string(index) + "/" + std::to_string(count) +
                                ": expected K/N with 0 <= K < N");
  }
  const auto shard_of = [&](const FilePlan& file) {
    std::uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
    for (const unsigned char c : file.input.lexically_relative(input_dir).generic_string()) {
      hash = (hash ^ c) * 1099511628211ull;
    }
    return static_cast<int>(hash % static_cast<std::uint64_t>(count));
  };
  std::erase_if(plan.files, [&](const FilePlan& file) { return shard_of(file) != index; });
}

ImageFolderSource::ImageFolderSource(const FolderPlan& plan, const Chain& chain, std::uint64_t max_pixels)
    : plan_(plan), chain_(chain), max_pixels_(max_pixels) {}

std::optional<Item> ImageFolderSource::next() {
  if (next_ == plan_.files.size()) return std::nullopt;
  const FilePlan& file = plan_.files[next_];
  Item item{next_++, file.input.string(), {}, file.skip};
  if (!file.refusal.empty()) item.refusal = "not processed: " + file.refusal;
  return item;
}

std::vector<std::string> ImageFolderSource::read(const Item& item, const FrameAllocator& allocate) {
  return read_image_into(
      plan_.files[item.index].input,
      [&](Size size) {
        const Size largest = largest_frame(chain_, size);
        if (largest.pixels() > max_pixels_) {
          throw PixelLimitError("the chain makes a " + to_string(largest) + " frame (" +
                                std::to_string(largest.pixels()) + " pixels) from this " + to_string(size) +
                                " image, more than the limit of " + std::to_string(max_pixels_) + " pixels");
        }
        return allocate(size);
      },
      max_pixels_);
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

ImageFolderSink::ImageFolderSink(const FolderPlan& plan, int quality, Existing existing)
    : plan_(plan), quality_(quality), existing_(existing) {}

void ImageFolderSink::write(const Item& item, ConstFrameView frame) {
  const fs::path& output = plan_.files[item.index].output;
  std::error_code error;
  fs::create_directories(output.parent_path(), error);
  if (error) throw IoError(output.parent_path(), "cannot create the folder: " + error.message());
  write_image(output, frame, quality_, existing_);
}

}  // namespace imgpipe::io
