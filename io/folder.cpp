#include "folder.hpp"

#include "io_error.hpp"

#include <algorithm>
#include <array>
#include <cctype>

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

std::string image_extensions_text() {
  std::string text;
  for (std::string_view extension : kImageExtensions) {
    if (!text.empty()) text += ' ';
    text += extension;
  }
  return text;
}

namespace {

namespace fs = std::filesystem;

// One folder, then its subfolders; `relative` is the folder's path relative to the root.
void walk(const fs::path& root, const fs::path& relative, std::vector<FolderEntry>& entries) {
  std::error_code error;
  fs::directory_iterator it(root / relative, error), end;
  if (error) {
    if (relative.empty()) throw IoError(root, "cannot list the folder: " + error.message());
    entries.push_back({relative, "cannot list the folder: " + error.message() + "; images in it were not processed"});
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
      folders.push_back(name);
      if (image_name) entries.push_back({name, "is a directory, not an image file (images inside it are processed)"});
      continue;
    }
    if (!image_name) continue;
    const fs::file_status target = entry.status(status_error);  // follows a link
    if (fs::is_regular_file(target)) {
      entries.push_back({name, ""});
    } else if (fs::is_symlink(own) && !fs::exists(target)) {
      entries.push_back({name, "is a broken symbolic link"});
    } else if (fs::is_directory(target)) {
      entries.push_back({name, "is a link to a directory, not an image file (links to folders are not followed)"});
    } else {
      entries.push_back({name, "is not a regular file (a FIFO, socket or device)"});
    }
  }
  if (error) {
    if (relative.empty()) throw IoError(root, "cannot list the folder: " + error.message());
    entries.push_back({relative, "cannot list the whole folder: " + error.message()});
  }
  for (const fs::path& folder : folders) walk(root, folder, entries);
}

}  // namespace

std::vector<FolderEntry> list_image_entries(const std::filesystem::path& root) {
  std::vector<FolderEntry> entries;
  walk(root, {}, entries);
  std::sort(entries.begin(), entries.end(), [](const FolderEntry& a, const FolderEntry& b) {
    return a.relative < b.relative;
  });
  return entries;
}

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
