#include "folders.hpp"

#include "exit_codes.hpp"
#include "folder.hpp"

#include <algorithm>
#include <map>

namespace imgpipe::app {
namespace {

namespace fs = std::filesystem;

fs::path resolved(const fs::path& path) { return fs::weakly_canonical(fs::absolute(path)); }

}  // namespace

void check_folders(const fs::path& input_dir, const fs::path& output_dir) {
  const fs::path input = resolved(input_dir), output = resolved(output_dir);
  if (io::is_within(output, input)) {
    throw UsageError("the output folder '" + output_dir.string() + "' is the input folder '" + input_dir.string() +
                     "' or inside it; choose one outside it so outputs never mix with inputs");
  }
  if (io::is_within(input, output)) {
    throw UsageError("the input folder '" + input_dir.string() + "' is inside the output folder '" +
                     output_dir.string() + "'; choose folders side by side so outputs never mix with inputs");
  }
}

BatchPlan plan_outputs(const fs::path& input_dir, const fs::path& output_dir, std::string_view format,
                       ExistingOutputs existing, bool follow_links) {
  const fs::path output_root = resolved(output_dir);
  const io::FolderListing listing = io::list_folder(input_dir, {follow_links, output_dir});
  BatchPlan batch{{}, listing.unsupported, listing.links_not_followed};
  std::vector<FilePlan>& plans = batch.files;
  std::map<fs::path, fs::path> first_input_for_output;
  for (const io::FolderEntry& entry : listing.entries) {
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
  return batch;
}

}  // namespace imgpipe::app
