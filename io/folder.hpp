// Finding the images in a folder tree, by extension.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace imgpipe::io {

// .ppm .png .jpg .jpeg .bmp .tif .tiff .webp; `extension` includes the dot and is compared in lower case.
bool is_image_extension(std::string_view extension);
// The list above as text, for messages.
std::string image_extensions_text();
// An output format a batch job takes: "same" (each input's), or an image extension in lower case without its
// dot ("png", "jpg", "webp", ...).
bool is_output_format(std::string_view format);
// The path's extension in lower case ("" when it has none).
std::string lowercase_extension(const std::filesystem::path& path);

// Every regular file (or link to one) under `root` with an image extension, recursively, as paths relative
// to `root`, sorted. Directories that are links are not followed, so a link loop cannot trap the walk.
// Throws IoError when `root` or a folder below it cannot be read.
std::vector<std::filesystem::path> list_images(const std::filesystem::path& root);

// What a batch should hear about: the image files list_images() gives (empty `problem`), and, with the reason
// in `problem`, every entry that is named like an image but cannot be one (a folder, which is still walked;
// a link to a folder; a broken link; a FIFO, socket or device) and every folder below `root` that cannot be
// listed. Relative to `root`, sorted. Throws IoError only when `root` itself cannot be listed.
struct FolderEntry {
  std::filesystem::path relative;
  std::string problem;
  bool operator==(const FolderEntry&) const = default;
};
std::vector<FolderEntry> list_image_entries(const std::filesystem::path& root);

// How list_folder walks.
struct FolderWalk {
  // Also walk folders reached through symbolic links, when they lie outside the root (folders inside it are
  // walked anyway) and outside `avoid`. Every folder is walked once (so link loops end), and `avoid` never, even
  // where a link leads to a folder above it.
  bool follow_links = false;
  std::filesystem::path avoid;  // e.g. the output folder of a batch
};

// list_image_entries' entries, and what the walk passed over without an entry of its own.
struct FolderListing {
  std::vector<FolderEntry> entries;
  std::size_t unsupported = 0;         // regular files without an image extension (.gif, .txt, ...)
  std::size_t links_not_followed = 0;  // links to folders not walked (not named like images; those get an entry)
  std::size_t unfinished_outputs = 0;  // imgpipe's own temporaries that a killed run left (is_temporary_name)
};
FolderListing list_folder(const std::filesystem::path& root, const FolderWalk& options);

// True when `path` is `folder` or below it, comparing components; both absolute and free of "." and "..".
bool is_within(const std::filesystem::path& path, const std::filesystem::path& folder);

}  // namespace imgpipe::io
