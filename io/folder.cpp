#include "folder.hpp"

#include "file_bytes.hpp"
#include "io_error.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <set>
#include <utility>

#include <sys/stat.h>

namespace imgpipe::io {
namespace {

constexpr std::array<std::string_view, 8> kImageExtensions = {".ppm", ".png", ".jpg", ".jpeg",
                                                              ".bmp", ".tif", ".tiff", ".webp"};

std::string to_lower(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

}  // namespace

std::string lowercase_extension(const std::filesystem::path& path) { return to_lower(path.extension().string()); }

bool is_image_extension(std::string_view extension) {
  return std::find(kImageExtensions.begin(), kImageExtensions.end(), to_lower(extension)) != kImageExtensions.end();
}

bool is_output_format(std::string_view format) {
  if (format == "same") return true;
  std::string extension(1, '.');
  extension += format;
  return to_lower(format) == format && is_image_extension(extension);
}

std::string image_extensions_text() {
  std::string text;
  for (std::string_view extension : kImageExtensions) {
    if (!text.empty()) text += ' ';
    text += extension;
  }
  return text;
}

bool is_within(const std::filesystem::path& path, const std::filesystem::path& folder) {
  auto p = path.begin();
  for (auto f = folder.begin(); f != folder.end(); ++f, ++p) {
    if (f->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *f) return false;
  }
  return true;
}

namespace {

namespace fs = std::filesystem;

class Walker {
 public:
  Walker(const fs::path& root, const FolderWalk& options)
      : root_(root), options_(options), root_resolved_(fs::weakly_canonical(fs::absolute(root))) {
    if (!options_.avoid.empty()) {
      avoid_resolved_ = fs::weakly_canonical(fs::absolute(options_.avoid));
      avoid_id_ = folder_id(options_.avoid);
    }
  }

  FolderListing run() {
    remember_walked(root_);
    walk({});
    std::sort(listing_.entries.begin(), listing_.entries.end(),
              [](const FolderEntry& a, const FolderEntry& b) { return a.relative < b.relative; });
    return std::move(listing_);
  }

 private:
  using FolderId = std::pair<dev_t, ino_t>;

  static std::optional<FolderId> folder_id(const fs::path& folder) {
    struct stat info {};
    if (::stat(folder.c_str(), &info) != 0) return std::nullopt;
    return FolderId{info.st_dev, info.st_ino};
  }

  // True the first time a folder (by device and inode) is seen, and never for the folder to avoid: a folder is
  // walked once, whether reached as a subfolder or through a link to it or to a folder above it, so link loops
  // end and a followed link to a folder above the outputs does not lead into them.
  bool remember_walked(const fs::path& folder) {
    const std::optional<FolderId> id = folder_id(folder);
    if (!id) return true;
    if (id == avoid_id_) return false;
    return walked_.insert(*id).second;
  }

  // A link to a folder is followed only with --follow-links, and only out of the input folder (whatever it
  // leads to inside is walked anyway), never into the folder to avoid (the outputs), never twice.
  bool follow(const fs::path& link) {
    if (!options_.follow_links) return false;
    std::error_code error;
    const fs::path target = fs::canonical(link, error);
    if (error || is_within(target, root_resolved_)) return false;
    if (!avoid_resolved_.empty() && is_within(target, avoid_resolved_)) return false;
    return remember_walked(target);
  }

  // One folder, then its subfolders; `relative` is the folder's path relative to the root.
  void walk(const fs::path& relative) {
    std::error_code error;
    fs::directory_iterator it(root_ / relative, error), end;
    if (error) {
      if (relative.empty()) throw IoError(root_, "cannot list the folder: " + error.message(), error);
      listing_.entries.push_back(
          {relative, "cannot list the folder: " + error.message() + "; images in it were not processed"});
      return;
    }
    std::vector<fs::path> folders;
    for (; it != end; it.increment(error)) {
      if (error) break;
      const fs::directory_entry& entry = *it;
      const fs::path name = relative / entry.path().filename();
      const bool image_name = is_image_extension(entry.path().extension().string());
      std::error_code status_error;
      const fs::file_status own = entry.symlink_status(status_error);
      if (fs::is_directory(own)) {
        if (remember_walked(entry.path())) folders.push_back(name);
        if (image_name) {
          listing_.entries.push_back({name, "is a directory, not an image file (images inside it are processed)"});
        }
        continue;
      }
      if (is_temporary_name(entry.path().filename())) {
        ++listing_.unfinished_outputs;
        continue;
      }
      const fs::file_status target = entry.status(status_error);  // follows a link
      if (fs::is_directory(target)) {  // a link to a folder
        const bool followed = follow(entry.path());
        if (followed) folders.push_back(name);
        if (!image_name) {
          if (!followed) ++listing_.links_not_followed;
          continue;
        }
        const char* why = followed                ? "images inside it are processed"
                          : options_.follow_links ? "not followed: it leads back into the input, into the output or "
                                                    "to a folder already walked"
                                                  : "links to folders are not followed";
        listing_.entries.push_back({name, std::string("is a link to a directory, not an image file (") + why + ")"});
        continue;
      }
      if (!image_name) {
        if (fs::is_regular_file(target)) ++listing_.unsupported;
        continue;
      }
      if (fs::is_regular_file(target)) {
        listing_.entries.push_back({name, ""});
      } else if (fs::is_symlink(own) && !fs::exists(target)) {
        listing_.entries.push_back({name, "is a broken symbolic link"});
      } else {
        listing_.entries.push_back({name, "is not a regular file (a FIFO, socket or device)"});
      }
    }
    if (error) {
      if (relative.empty()) throw IoError(root_, "cannot list the folder: " + error.message(), error);
      listing_.entries.push_back({relative, "cannot list the whole folder: " + error.message()});
    }
    for (const fs::path& folder : folders) walk(folder);
  }

  fs::path root_;
  FolderWalk options_;
  fs::path root_resolved_;
  fs::path avoid_resolved_;
  std::optional<FolderId> avoid_id_;  // none where the folder to avoid does not exist yet
  std::set<FolderId> walked_;
  FolderListing listing_;
};

}  // namespace

FolderListing list_folder(const std::filesystem::path& root, const FolderWalk& options) {
  return Walker(root, options).run();
}

std::vector<FolderEntry> list_image_entries(const std::filesystem::path& root) { return list_folder(root, {}).entries; }

std::vector<std::filesystem::path> list_images(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> images;
  for (FolderEntry& entry : list_image_entries(root)) {
    if (entry.problem.empty()) {
      images.push_back(std::move(entry.relative));
    } else if (entry.problem.starts_with("cannot list")) {
      throw IoError(root / entry.relative, entry.problem);
    }
  }
  return images;
}

}  // namespace imgpipe::io
