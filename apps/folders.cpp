#include "folders.hpp"

#include "exit_codes.hpp"
#include "folder.hpp"

#include <algorithm>
#include <map>

namespace imgpipe::app {
namespace {

namespace fs = std::filesystem;

// True when `path` is `folder` or below it; both absolute and free of "." and "..".
bool is_within(const fs::path& path, const fs::path& folder) {
  auto p = path.begin();
  for (auto f = folder.begin(); f != folder.end(); ++f, ++p) {
    if (f->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *f) return false;
  }
  return true;
}

fs::path resolved(const fs::path& path) { return fs::weakly_canonical(fs::absolute(path)); }

}  // namespace

void check_folders(const fs::path& input_dir, const fs::path& output_dir) {
  if (is_within(resolved(output_dir), resolved(input_dir))) {
    throw UsageError("the output folder '" + output_dir.string() + "' is the input folder '" + input_dir.string() +
                     "' or inside it; choose one outside it so outputs never mix with inputs");
  }
}

std::vector<FilePlan> plan_outputs(const fs::path& input_dir, const fs::path& output_dir, std::string_view format,
                                   ExistingOutputs existing) {
  const fs::path input_root = resolved(input_dir);
  const fs::path output_root = resolved(output_dir);
  std::vector<FilePlan> plans;
  std::map<fs::path, fs::path> first_input_for_output;
  for (const io::FolderEntry& entry : io::list_image_entries(input_dir)) {
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
    } else if (is_within(output_resolved, input_root)) {
      // Only possible when the input folder lies inside the output folder.
      plan.refusal = "its output " + plan.output.string() + " would land inside the input folder";
    } else if (existing != ExistingOutputs::overwrite && fs::exists(fs::symlink_status(plan.output, error))) {
      if (existing == ExistingOutputs::skip) {
        plan.skip = true;
      } else {
        plan.refusal = "output " + plan.output.string() + " exists; --overwrite replaces it, --skip-existing skips it";
      }
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace imgpipe::app
