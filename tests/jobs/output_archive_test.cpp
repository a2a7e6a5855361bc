// The model and output archives of a training job (jobs/output_archive.h): every host's folder
// merged into one gzip'd tar, read back by an independent implementation (GNU tar), and the
// uncompressed merge of CompressionType NONE.
#include "jobs/output_archive.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace vigil::jobs {
namespace {

using test::ScratchDir;
namespace fs = std::filesystem;

void write(const fs::path& path, const std::string& bytes, mode_t mode = 0644) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  ::chmod(path.c_str(), mode);
}

// `archive` unpacked by GNU tar into `into`; the test fails when tar refuses it.
void untar(const fs::path& archive, const fs::path& into) {
  fs::create_directories(into);
  const std::string command = fmt::format("tar -xzf '{}' -C '{}' 2>&1", archive.string(), into.string());
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

std::string tar_listing(const fs::path& archive) {
  const std::string command = fmt::format("tar -tzf '{}' 2>&1", archive.string());
  std::string out;
  if (std::FILE* p = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) out.append(buffer, n);
    EXPECT_EQ(::pclose(p), 0) << out;
  }
  return out;
}

// Two hosts' /opt/ml/model: algo-1 saved the model, algo-2 a file of its own and one that clashes.
struct TwoHosts {
  ScratchDir dir;
  std::vector<fs::path> roots{dir / "algo-1/model", dir / "algo-2/model"};
  const std::string long_name = std::string(60, 'd') + "/" + std::string(80, 'f') + ".bin";  // 141 bytes
  TwoHosts() {
    write(roots[0] / "model.pt", std::string(3000, 'm'));
    write(roots[0] / "code/inference.py", "print('hi')\n", 0755);
    write(roots[0] / "empty.txt", "");
    write(roots[0] / long_name, "long");
    fs::create_directories(roots[0] / "empty-folder");
    fs::create_symlink("model.pt", roots[0] / "latest.pt");
    write(roots[1] / "model.pt", "algo-2's");              // clashes: algo-1's is kept
    write(roots[1] / "code/extra.py", "x = 2\n");          // the folder both have is one folder
    write(roots[1] / "shard-1.bin", std::string(70000, '\x01'));
  }
};

TEST(OutputArchive, HostsMergedIntoOneTarThatGnuTarReads) {
  TwoHosts hosts;
  const fs::path archive = hosts.dir / "out/model.tar.gz";
  fs::create_directories(archive.parent_path());
  auto report = write_merged_tar_gz(hosts.roots, archive);
  ASSERT_VIGIL_OK(report);
  EXPECT_FALSE(fs::exists(fs::path(archive).concat(".tmp")));
  EXPECT_EQ(report->clashes, std::vector<std::string>{"model.pt (" + hosts.roots[1].string() + ")"});
  EXPECT_TRUE(report->skipped.empty());
  EXPECT_EQ(report->files, 7u);  // 4 files and a link of algo-1, 2 files of algo-2
  EXPECT_EQ(report->bytes, 3000u + 12 + 0 + 4 + 6 + 70000);
  // Names relative to the roots, no "./", folders with their '/'.
  const std::string listing = tar_listing(archive);
  EXPECT_NE(listing.find("model.pt\n"), std::string::npos) << listing;
  EXPECT_NE(listing.find("code/\n"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("./"), std::string::npos) << listing;

  const fs::path out = hosts.dir / "unpacked";
  untar(archive, out);
  EXPECT_EQ(test::read_file(out / "model.pt"), std::string(3000, 'm'));
  EXPECT_EQ(test::read_file(out / "code/inference.py"), "print('hi')\n");
  EXPECT_EQ(test::read_file(out / "code/extra.py"), "x = 2\n");
  EXPECT_EQ(test::read_file(out / "empty.txt"), "");
  EXPECT_EQ(test::read_file(out / hosts.long_name), "long");  // a pax path record
  EXPECT_EQ(test::read_file(out / "shard-1.bin"), std::string(70000, '\x01'));
  EXPECT_TRUE(fs::is_directory(out / "empty-folder"));
  ASSERT_TRUE(fs::is_symlink(out / "latest.pt"));
  EXPECT_EQ(fs::read_symlink(out / "latest.pt"), fs::path("model.pt"));
  struct stat st {};
  ASSERT_EQ(::stat((out / "code/inference.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  // The same files give the same archive.
  const fs::path again = hosts.dir / "out/again.tar.gz";
  ASSERT_VIGIL_OK(write_merged_tar_gz(hosts.roots, again));
  EXPECT_EQ(test::read_file(again), test::read_file(archive));
}

TEST(OutputArchive, NothingToArchiveIsAnEmptyArchive) {
  ScratchDir dir;
  fs::create_directories(dir / "algo-1/output/data");
  const std::vector<fs::path> roots{dir / "algo-1/output/data", dir / "algo-2/output/data"};  // algo-2's is missing
  auto report = write_merged_tar_gz(roots, dir / "output.tar.gz");
  ASSERT_VIGIL_OK(report);
  EXPECT_EQ(report->files, 0u);
  EXPECT_EQ(tar_listing(dir / "output.tar.gz"), "");
  // 10240 zero bytes compress to a few dozen.
  EXPECT_LT(fs::file_size(dir / "output.tar.gz"), 100u);
}

TEST(OutputArchive, WhatIsNotAFileFolderOrLinkIsSkippedAndSaid) {
  ScratchDir dir;
  const fs::path root = dir / "algo-1/model";
  write(root / "model.pt", "m");
  ASSERT_EQ(::mkfifo((root / "pipe").c_str(), 0600), 0);
  // A root that is a link is not followed: it could lead anywhere.
  fs::create_directories(dir / "elsewhere");
  write(dir / "elsewhere/secret", "s");
  fs::create_directories(dir / "algo-2");
  fs::create_directory_symlink(dir / "elsewhere", dir / "algo-2/model");
  const std::vector<fs::path> roots{root, dir / "algo-2/model"};
  auto report = write_merged_tar_gz(roots, dir / "model.tar.gz");
  ASSERT_VIGIL_OK(report);
  EXPECT_EQ(report->files, 1u);
  ASSERT_EQ(report->skipped.size(), 2u);
  EXPECT_EQ(report->skipped[0], (root / "pipe").string() + ": a FIFO");
  EXPECT_EQ(report->skipped[1], (dir / "algo-2/model").string() + ": not a folder (a link to one is not followed)");
  EXPECT_EQ(tar_listing(dir / "model.tar.gz"), "model.pt\n");
}

TEST(OutputArchive, AnArchiveThatCannotBeWrittenIsAnErrorAndLeavesNothing) {
  TwoHosts hosts;
  auto report = write_merged_tar_gz(hosts.roots, hosts.dir / "no-such-folder/model.tar.gz");
  ASSERT_FALSE(report);
  EXPECT_NE(report.error().message.find("no-such-folder"), std::string::npos) << report.error().message;
}

TEST(OutputArchive, TheUncompressedModelIsTheMergedFiles) {
  TwoHosts hosts;
  const fs::path folder = hosts.dir / "merged";
  auto report = copy_merged(hosts.roots, folder);
  ASSERT_VIGIL_OK(report);
  EXPECT_EQ(test::list_files(folder),
            (std::vector<std::string>{"code/extra.py", "code/inference.py", hosts.long_name, "empty.txt", "model.pt",
                                      "shard-1.bin"}));
  EXPECT_EQ(test::read_file(folder / "model.pt"), std::string(3000, 'm'));
  EXPECT_TRUE(fs::is_directory(folder / "empty-folder"));
  EXPECT_FALSE(fs::exists(folder / "latest.pt"));
  ASSERT_EQ(report->skipped.size(), 1u);
  EXPECT_NE(report->skipped[0].find("latest.pt: a symbolic link"), std::string::npos) << report->skipped[0];
  EXPECT_EQ(report->clashes.size(), 1u);
}

}  // namespace
}  // namespace vigil::jobs
