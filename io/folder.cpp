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

std::vector<std::filesystem::path> list_images(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::vector<fs::path> images;
  std::error_code error;
  fs::recursive_directory_iterator it(root, error), end;
  if (error) throw IoError(root, "cannot list the folder: " + error.message());
  for (; it != end; it.increment(error)) {
    if (error) break;
    const fs::directory_entry& entry = *it;
    std::error_code status_error;  // a dangling link is simply not an image file
    if (entry.is_regular_file(status_error) && is_image_extension(entry.path().extension().string())) {
      images.push_back(entry.path().lexically_relative(root));
    }
  }
  if (error) throw IoError(root, "cannot list the folder: " + error.message());
  std::sort(images.begin(), images.end());
  return images;
}

}  // namespace imgpipe::io
