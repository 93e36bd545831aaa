// Walking an input folder: which files count as images, in what order, under which relative names.
#include "file_bytes.hpp"
#include "folder.hpp"
#include "image_folder.hpp"
#include "io_error.hpp"
#include "test_io_helpers.hpp"

#include <gtest/gtest.h>

namespace imgpipe::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::write_bytes;

TEST(Folder, ImageExtensionsIgnoreCase) {
  for (const char* ext : {".ppm", ".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".JPG", ".Png"}) {
    EXPECT_TRUE(is_image_extension(ext)) << ext;
  }
  for (const char* ext : {"", ".", ".txt", ".gif", ".jpgx", "jpg", ".pp"}) EXPECT_FALSE(is_image_extension(ext)) << ext;
  EXPECT_EQ(lowercase_extension("a/B.JPeG"), ".jpeg");
  EXPECT_EQ(lowercase_extension("noext"), "");
}

TEST(Folder, ListsImagesRecursivelySortedAndRelative) {
  TempDir dir;
  for (const char* name : {"b.PNG", "a.jpg", "notes.txt", "noext", "sub/c.tiff", "sub/deeper/d.webp",
                           "sub/e.JPEG", "x.png/f.bmp", "sub/.hidden.ppm"}) {
    write_bytes(dir.path() / name, "x");
  }
  const std::vector<fs::path> expected = {"a.jpg", "b.PNG", "sub/.hidden.ppm", "sub/c.tiff", "sub/deeper/d.webp",
                                          "sub/e.JPEG", "x.png/f.bmp"};
  EXPECT_EQ(list_images(dir.path()), expected);  // the folder named x.png is walked, not listed
}

// File names are bytes on Linux: names that are not UTF-8 (an old camera's Latin-1, a damaged copy) are listed and
// planned like any other, byte for byte.
TEST(Folder, NamesThatAreNotUtf8AreListedAndPlanned) {
  TempDir dir;
  const std::string latin1 = "caf\xe9.ppm", stray = "\xff/\xfe.png";
  for (const std::string& name : {latin1, stray, std::string("a.ppm")}) write_bytes(dir.path() / name, "x");
  EXPECT_EQ(list_images(dir.path()), (std::vector<fs::path>{"a.ppm", latin1, stray}));
  const FolderPlan plan = plan_outputs(dir.path(), dir.path() / "out", "jpg", ExistingOutputs::refuse);
  ASSERT_EQ(plan.files.size(), 3u);
  EXPECT_EQ(plan.files[2].output, (dir.path() / "out" / "\xff" / "\xfe.jpg").string());
}

// A temporary that a killed run left beside its output keeps the image extension; a later walk of that folder
// passes over it, counted, so it never becomes an input. A user's file that only looks alike is listed.
TEST(Folder, UnfinishedTemporariesAreNeverInputs) {
  TempDir dir;
  write_bytes(dir.path() / "a.jpg", "x");
  const fs::path temporary = temporary_name_for(dir.path() / "sub" / "b.png");
  write_bytes(temporary, "half an image");
  write_bytes(dir.path() / ".c.imgpipe-tmp-notes.png", "x");
  EXPECT_TRUE(is_temporary_name(temporary.filename())) << temporary;
  EXPECT_FALSE(is_temporary_name("b.png"));
  EXPECT_TRUE(is_temporary_name(".b.imgpipe-tmp-12-0"));
  EXPECT_TRUE(is_temporary_name("..imgpipe-tmp-1-2.a.imgpipe-tmp-3-4.png"));
  EXPECT_TRUE(is_temporary_name(temporary_name_for("a\nb.png").filename()));  // a line break in the user's name
  for (const char* look_alike : {"b.imgpipe-tmp-1-2.png", ".b.imgpipe-tmp-1-.png", ".b.imgpipe-tmp--2.png",
                                 ".b.imgpipe-tmp-1-2x.png", ".b.imgpipe-tmp-1-2.tar.gz", ".imgpipe-tmp-1-2.png"}) {
    EXPECT_FALSE(is_temporary_name(look_alike)) << look_alike;
  }
  const FolderListing listing = list_folder(dir.path(), {});
  std::vector<fs::path> listed;
  for (const FolderEntry& entry : listing.entries) listed.push_back(entry.relative);
  EXPECT_EQ(listed, (std::vector<fs::path>{".c.imgpipe-tmp-notes.png", "a.jpg"}));
  EXPECT_EQ(listing.unfinished_outputs, 1u);
}

TEST(Folder, FollowsLinksToFilesButNotToFolders) {
  TempDir dir;
  write_bytes(dir.path() / "real/a.png", "x");
  fs::create_symlink("real/a.png", dir.path() / "link.png");
  fs::create_directory_symlink("..", dir.path() / "real/loop");  // would recurse forever if followed
  fs::create_symlink("missing.png", dir.path() / "dangling.png");
  EXPECT_EQ(list_images(dir.path()), (std::vector<fs::path>{"link.png", "real/a.png"}));
}

// A chosen list of files (one batch of a distributed job) is planned as the whole folder's files are: outputs
// under the same relative paths with the format's extension, one output per input, existing outputs refused,
// and paths that leave the input folder refused with the reason.
TEST(Folder, PlanFilesMapsAChosenListAsTheFolderPlanDoes) {
  TempDir dir;
  const fs::path in = dir.path() / "in", out = dir.path() / "out";
  write_bytes(out / "sub/exists.png", "x");
  const FolderPlan plan = plan_files(in, {"a.jpg", "sub/b.PPM", "a.png", "sub/exists.jpg", "../up.png", "/abs.png"},
                                     out, "png", ExistingOutputs::refuse);
  ASSERT_EQ(plan.files.size(), 6u);
  EXPECT_EQ(plan.files[0].input, (in / "a.jpg").string());
  EXPECT_EQ(plan.files[0].output, (out / "a.png").string());
  EXPECT_TRUE(plan.files[0].refusal.empty());
  EXPECT_EQ(plan.files[1].output, (out / "sub/b.png").string());
  EXPECT_NE(plan.files[2].refusal.find("already made from"), std::string::npos) << plan.files[2].refusal;
  EXPECT_NE(plan.files[3].refusal.find("exists"), std::string::npos) << plan.files[3].refusal;
  for (std::size_t i : {4u, 5u}) {
    EXPECT_NE(plan.files[i].refusal.find("not a path inside the input folder"), std::string::npos)
        << plan.files[i].refusal;
  }
  EXPECT_TRUE(plan_files(in, {"sub/exists.jpg"}, out, "png", ExistingOutputs::overwrite).files[0].refusal.empty());
  EXPECT_TRUE(plan_files(in, {"sub/exists.jpg"}, out, "png", ExistingOutputs::skip).files[0].skip);
}

// A chosen path through a link to a folder is refused, as the folder's listing does not follow those: it could
// lead out of the input folder. A link to a file is taken, as the listing lists it.
TEST(Folder, PlanFilesRefusesAPathThroughALinkToAFolder) {
  TempDir dir;
  const fs::path in = dir.path() / "in", out = dir.path() / "out";
  write_bytes(dir.path() / "secret/s.png", "x");
  write_bytes(in / "real/a.png", "x");
  fs::create_directory_symlink(dir.path() / "secret", in / "link");
  fs::create_directory_symlink(in / "real", in / "real/again");
  fs::create_symlink(in / "real/a.png", in / "file-link.png");
  const FolderPlan plan = plan_files(in, {"link/s.png", "real/again/a.png", "real/a.png", "file-link.png"}, out, "same",
                                     ExistingOutputs::refuse);
  ASSERT_EQ(plan.files.size(), 4u);
  EXPECT_NE(plan.files[0].refusal.find("it goes through " + (in / "link").string() + ", a link to a folder"),
            std::string::npos)
      << plan.files[0].refusal;
  EXPECT_NE(plan.files[1].refusal.find((in / "real/again").string()), std::string::npos) << plan.files[1].refusal;
  EXPECT_TRUE(plan.files[2].refusal.empty()) << plan.files[2].refusal;
  EXPECT_TRUE(plan.files[3].refusal.empty()) << plan.files[3].refusal;
}

// Names under a prefix elsewhere (an object-store URL) get the outputs' rules alone: nothing on disk is asked
// about the input side, but a name that leads out of the prefix, and so out of the output folder, is refused.
TEST(Folder, PlanRemoteFilesAppliesTheOutputsRules) {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  write_bytes(out / "exists.png", "x");
  const FolderPlan plan = plan_remote_files("bucket/photos", {"a.jpg", "a.png", "exists.jpg", "../up.png", "b.png/"},
                                            out, "png", ExistingOutputs::refuse);
  EXPECT_TRUE(plan.input_dir.empty());
  ASSERT_EQ(plan.files.size(), 5u);
  EXPECT_EQ(plan.files[0].input, "bucket/photos/a.jpg");
  EXPECT_EQ(plan.files[0].output, (out / "a.png").string());
  EXPECT_TRUE(plan.files[0].refusal.empty()) << plan.files[0].refusal;
  EXPECT_EQ(plan.files[1].refusal,
            "its output " + (out / "a.png").string() + " is already made from bucket/photos/a.jpg");
  EXPECT_NE(plan.files[2].refusal.find("exists"), std::string::npos) << plan.files[2].refusal;
  EXPECT_EQ(plan.files[3].refusal, "not a path under the input prefix bucket/photos");
  EXPECT_EQ(plan.files[4].refusal, "names a folder (it ends in a slash), not an image file");
}

// An output written from bytes already encoded gets the sink's checks: never into the input folder through a
// link inside the output folder, even over an input; an existing file kept unless replaced.
TEST(Folder, WriteOutputFileNeverWritesIntoTheInputFolder) {
  TempDir dir;
  const fs::path in = dir.path() / "in", out = dir.path() / "out";
  write_bytes(in / "sub/a.png", "input");
  fs::create_directories(out);
  fs::create_directory_symlink(in / "sub", out / "sub");
  const std::vector<std::uint8_t> bytes = {'n', 'e', 'w'};
  for (const char* name : {"a.png", "b.png"}) {
    try {
      write_output_file(out / "sub" / name, bytes, in, Existing::replace);
      ADD_FAILURE() << name << " was written into the input folder";
    } catch (const IoError& e) {
      EXPECT_EQ(e.path(), out / "sub" / name);
      EXPECT_NE(e.reason().find("leads into the input folder " + in.string()), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(testing::file_bytes(in / "sub/a.png"), (std::vector<std::uint8_t>{'i', 'n', 'p', 'u', 't'}));
  EXPECT_FALSE(fs::exists(in / "sub/b.png"));
  write_output_file(out / "deeper/c.png", bytes, in, Existing::keep);
  EXPECT_EQ(testing::file_bytes(out / "deeper/c.png"), bytes);
  EXPECT_THROW(write_output_file(out / "deeper/c.png", bytes, in, Existing::keep), IoError);
  write_output_file(out / "sub/d.png", bytes, {}, Existing::keep);  // no input folder here: nothing to keep out of
  EXPECT_EQ(testing::file_bytes(in / "sub/d.png"), bytes);
}

// A refused output makes nothing among the inputs, not even the folders it would have gone in; an output that is
// a folder, or names one, is refused as such; a bare name goes in the working folder.
TEST(Folder, WriteOutputFileRefusesBeforeMakingAnything) {
  TempDir dir;
  const fs::path in = dir.path() / "in", out = dir.path() / "out";
  fs::create_directories(in / "sub");
  fs::create_directories(out / "taken.png");
  fs::create_directory_symlink(in / "sub", out / "sub");
  const std::vector<std::uint8_t> bytes = {'n', 'e', 'w'};
  EXPECT_THROW(write_output_file(out / "sub/new/deeper/x.png", bytes, in, Existing::replace), IoError);
  EXPECT_FALSE(fs::exists(in / "sub/new")) << "a folder was made among the inputs";
  for (const fs::path& folder : {out / "taken.png", out / "made/"}) {
    try {
      write_output_file(folder, bytes, in, Existing::replace);
      ADD_FAILURE() << folder << " was written";
    } catch (const IoError& e) {
      EXPECT_EQ(e.reason(), "not written: it is a folder, not a file") << folder;
    }
  }
  EXPECT_FALSE(fs::exists(out / "made"));
  const fs::path working = fs::current_path();
  fs::current_path(out);
  write_output_file("bare.png", bytes, in, Existing::keep);
  fs::current_path(working);
  EXPECT_EQ(testing::file_bytes(out / "bare.png"), bytes);
}

// The batch writer makes no folder among the inputs either when a link in the output folder leads there.
TEST(Folder, TheSinkMakesNoFolderAmongTheInputs) {
  TempDir dir;
  const fs::path in = dir.path() / "in", out = dir.path() / "out";
  fs::create_directories(in / "other");
  write_bytes(in / "sub/new/p.ppm", "P6 1 1 255\n...");
  fs::create_directories(out);
  fs::create_directory_symlink(in / "other", out / "sub");
  const FolderPlan plan = plan_outputs(in, out, "same", ExistingOutputs::refuse);
  ASSERT_EQ(plan.files.size(), 1u);
  ImageFolderSink sink(plan, 95, Existing::keep);
  const std::uint8_t pixel[3] = {1, 2, 3};
  Item item;
  item.index = 0;
  EXPECT_THROW(sink.write(item, ConstFrameView(pixel, {1, 1})), IoError);
  EXPECT_FALSE(fs::exists(in / "other/new")) << "a folder was made among the inputs";
}

// An output that is a folder is never taken for an existing file (skipped or replaced), and an output file whose
// name another output needs as its folder is refused, naming that output's input.
TEST(Folder, AnOutputThatIsOrMustBeAFolderIsRefused) {
  TempDir dir;
  const fs::path in = dir.path() / "in", out = dir.path() / "out";
  fs::create_directories(out / "taken.png");
  for (const ExistingOutputs existing : {ExistingOutputs::refuse, ExistingOutputs::overwrite, ExistingOutputs::skip}) {
    const FolderPlan plan = plan_files(in, {"taken.jpg"}, out, "png", existing);
    EXPECT_FALSE(plan.files[0].skip);
    EXPECT_EQ(plan.files[0].refusal, "its output " + (out / "taken.png").string() + " is a folder");
  }
  const FolderPlan plan =
      plan_files(in, {"x.jpg", "x.png/inner.png", "x.png/deeper/y.png"}, out, "png", ExistingOutputs::refuse);
  ASSERT_EQ(plan.files.size(), 3u);
  EXPECT_EQ(plan.files[0].refusal, "its output " + (out / "x.png").string() + " is the folder the output of " +
                                       (in / "x.png/inner.png").string() + " goes in");
  EXPECT_EQ(plan.files[1].refusal, "");
  EXPECT_EQ(plan.files[2].refusal, "");
}

// A folder and a bind mount or link of it are the same folder; a folder beside it is not.
TEST(Folder, CheckFoldersComparesFoldersThroughLinks) {
  TempDir dir;
  fs::create_directories(dir.path() / "in/sub");
  fs::create_directories(dir.path() / "out");
  fs::create_directory_symlink(dir.path() / "in/sub", dir.path() / "sub-link");
  EXPECT_NO_THROW(check_folders(dir.path() / "in", dir.path() / "out"));
  EXPECT_THROW(check_folders(dir.path() / "in", dir.path() / "sub-link/out"), std::invalid_argument);
  EXPECT_THROW(check_folders(dir.path() / "sub-link", dir.path() / "in"), std::invalid_argument);
  EXPECT_THROW(check_folders(dir.path() / "in", dir.path() / "in/../in/new"), std::invalid_argument);
}

TEST(Folder, MissingFolderIsAnIoErrorNamingIt) {
  TempDir dir;
  try {
    list_images(dir.path() / "nope");
    FAIL() << "listed a missing folder";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), dir.path() / "nope");
    EXPECT_NE(e.reason().find("cannot list the folder"), std::string::npos);
  }
}

TEST(Folder, ExtensionListForMessages) {
  EXPECT_EQ(image_extensions_text(), ".ppm .png .jpg .jpeg .bmp .tif .tiff .webp");
}

}  // namespace
}  // namespace imgpipe::io
