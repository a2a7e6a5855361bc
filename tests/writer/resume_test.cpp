// TrialWriter::resume(): a worker restarted after its process died continues its trial. What it had
// published stays as it was, what it left unfinished is removed, and step numbering continues.
// (tests/reliability kills real writer processes at random points; these pin each rule down.)
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <map>

#include "format/trial_layout.h"
#include "trial/trial.h"
#include "test_support.h"

namespace vigil::writer {
namespace {

namespace fs = std::filesystem;
using test::list_files;
using test::numeric;
using test::read_file;
using test::ScratchDir;

WriterOptions options_for(std::string worker = "worker_0", int64_t num_workers = 1) {
  WriterOptions options;
  options.worker = std::move(worker);
  options.num_workers = num_workers;
  for (auto& m : options.save_config) m.save_interval = 1;
  options.clock = [] { return 1700000000.0; };
  return options;
}

// Writes one step holding "w" = [global step, mode step] at the writer's next step of `mode`.
void write_step(TrialWriter& writer, Mode mode) {
  ASSERT_TRUE(writer.begin_step(mode));
  const std::vector<float> v{float(writer.global_step()), float(writer.mode_step())};
  ASSERT_TRUE(writer.save_tensor("w", numeric(ElementType::Float32, {2}, v)));
  ASSERT_TRUE(writer.end_step());
}

// The modes of global steps 0, 1, 2, ...
const std::vector<Mode> kModes{Mode::Train, Mode::Train, Mode::Eval, Mode::Train, Mode::Eval, Mode::Train};

// Steps 0..3 of kModes, published, and the writer gone without its end marker (its destructor
// publishes the collections, as a writer killed after its second step had begun would have).
void write_first_steps(const fs::path& dir, const std::string& worker = "worker_0") {
  auto writer = TrialWriter::create(dir, options_for(worker));
  ASSERT_VIGIL_OK(writer);
  for (size_t s = 0; s < 4; ++s) ASSERT_NO_FATAL_FAILURE(write_step(**writer, kModes[s]));
}

struct Version {
  ino_t inode;
  off_t size;
  int64_t mtime_ns;
  bool operator==(const Version&) const = default;
};

std::map<std::string, Version> versions(const fs::path& root) {
  std::map<std::string, Version> out;
  for (const auto& rel : list_files(root)) {
    struct stat st {};
    EXPECT_EQ(::stat((root / rel).c_str(), &st), 0) << rel;
    out[rel] = {st.st_ino, st.st_size, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  }
  return out;
}

void write_garbage(const fs::path& file) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << "half a record";
}

fs::path tmp_of(const fs::path& p) { return fs::path(p.string() + std::string(format::kTmpSuffix)); }

TEST(WriterResume, ContinuesAfterTheLastPublishedStepWithEveryModeCounted) {
  ScratchDir dir;
  ASSERT_NO_FATAL_FAILURE(write_first_steps(dir.path()));
  const auto before = versions(dir.path());

  auto writer = TrialWriter::resume(dir.path(), options_for());
  ASSERT_VIGIL_OK(writer);
  EXPECT_EQ((*writer)->global_step(), 3);
  EXPECT_EQ((*writer)->mode(), Mode::Train);
  ASSERT_NO_FATAL_FAILURE(write_step(**writer, Mode::Eval));
  EXPECT_EQ((*writer)->global_step(), 4);
  EXPECT_EQ((*writer)->mode_step(), 1);  // the second EVAL step
  ASSERT_NO_FATAL_FAILURE(write_step(**writer, Mode::Train));
  EXPECT_EQ((*writer)->global_step(), 5);
  EXPECT_EQ((*writer)->mode_step(), 3);  // TRAIN steps 0, 1, 3 came before
  ASSERT_TRUE((*writer)->close());

  // Nothing published before the restart was written again, not even the collections file.
  const auto after = versions(dir.path());
  for (const auto& [rel, version] : before) {
    ASSERT_TRUE(after.contains(rel)) << rel;
    EXPECT_EQ(after.at(rel), version) << rel << " was rewritten";
  }

  auto trial = Trial::open(dir.path());
  ASSERT_VIGIL_OK(trial);
  EXPECT_EQ((*trial)->steps().value(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  for (int64_t g = 0; g < 6; ++g) {
    auto mode = (*trial)->mode_modestep(g);
    ASSERT_TRUE(mode);
    EXPECT_EQ(mode->first, kModes[size_t(g)]) << g;
    auto v = (*trial)->value("w", g);
    ASSERT_VIGIL_OK(v);
    EXPECT_EQ(v->as<float>()[0], float(g));
    EXPECT_EQ(v->as<float>()[1], float(mode->second));
  }
  EXPECT_EQ((*trial)->global_step(Mode::Eval, 1), 4);
  EXPECT_EQ((*trial)->global_step(Mode::Train, 3), 5);
}

TEST(WriterResume, RemovesWhatTheWorkerLeftUnfinishedAndNothingElse) {
  ScratchDir dir;
  ASSERT_NO_FATAL_FAILURE(write_first_steps(dir.path()));
  ASSERT_NO_FATAL_FAILURE(write_first_steps(dir.path(), "worker_1"));
  const fs::path root = dir.path();
  // Killed in step 4 (event file half written, index half written), or between its two renames
  // (the event file published, no index naming it), or while publishing the collections.
  const std::vector<fs::path> own_leftovers{
      tmp_of(root / format::event_file_relpath(4, "worker_0")),
      tmp_of(root / format::index_file_relpath(4, "worker_0")),
      root / format::event_file_relpath(5, "worker_0"),
      tmp_of(root / format::collections_file_relpath("worker_0")),
  };
  // Another worker's unfinished files are its own business, and so is the end marker's .tmp
  // (a worker finishing right now may be about to rename it).
  const std::vector<fs::path> others{
      tmp_of(root / format::event_file_relpath(4, "worker_1")),
      tmp_of(root / format::index_file_relpath(4, "worker_1")),
      root / format::event_file_relpath(5, "worker_1"),
      tmp_of(root / format::kEndOfTrainingMarker),
      root / "events/000000000004/000000000004_worker_10.tfevents.tmp",
  };
  for (const auto& f : own_leftovers) write_garbage(f);
  for (const auto& f : others) write_garbage(f);

  auto writer = TrialWriter::resume(root, options_for());
  ASSERT_VIGIL_OK(writer);
  for (const auto& f : own_leftovers) EXPECT_FALSE(fs::exists(f)) << f << " was left";
  for (const auto& f : others) EXPECT_TRUE(fs::exists(f)) << f << " was removed";
  EXPECT_EQ((*writer)->global_step(), 3);
  ASSERT_NO_FATAL_FAILURE(write_step(**writer, Mode::Eval));
  ASSERT_TRUE((*writer)->end_step());
  for (const auto& rel : list_files(root)) {
    const bool own = rel.find("worker_0") != std::string::npos;
    EXPECT_FALSE(own && rel.ends_with(format::kTmpSuffix)) << rel;
  }
}

TEST(WriterResume, NeverWritesOverAPublishedStep) {
  ScratchDir dir;
  ASSERT_NO_FATAL_FAILURE(write_first_steps(dir.path()));
  auto writer = TrialWriter::resume(dir.path(), options_for());
  ASSERT_VIGIL_OK(writer);
  for (int64_t g : {0, 2, 3}) {
    auto r = (*writer)->begin_step_at(g, Mode::Train, 10);
    ASSERT_FALSE(r) << g;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument) << r.error().message;
  }
  EXPECT_TRUE((*writer)->begin_step_at(7, Mode::Train, 10));
}

TEST(WriterResume, PublishesMissingCollectionsOnceItHasSavedAStep) {
  ScratchDir dir;
  ASSERT_NO_FATAL_FAILURE(write_first_steps(dir.path()));
  // Killed after its first index but before the collections file was renamed into place.
  const fs::path collections = dir / format::collections_file_relpath("worker_0");
  const std::string published = read_file(collections);
  fs::remove(collections);

  auto writer = TrialWriter::resume(dir.path(), options_for());
  ASSERT_VIGIL_OK(writer);
  ASSERT_NO_FATAL_FAILURE(write_step(**writer, Mode::Eval));
  EXPECT_FALSE(fs::exists(collections));  // written when the next step begins, as create()'s
  ASSERT_TRUE((*writer)->begin_step(Mode::Train));
  ASSERT_TRUE(fs::exists(collections));
  EXPECT_EQ(read_file(collections), published);
}

TEST(WriterResume, OnADirectoryWithoutItsFilesIsCreate) {
  ScratchDir created, resumed;
  ScratchDir other_worker;
  ASSERT_NO_FATAL_FAILURE(write_first_steps(other_worker.path(), "worker_1"));
  for (const fs::path& dir : {created / "trial", resumed / "trial", other_worker.path()}) {
    const bool fresh = dir.parent_path() == created.path();
    auto writer = fresh ? TrialWriter::create(dir, options_for()) : TrialWriter::resume(dir, options_for());
    ASSERT_VIGIL_OK(writer);
    EXPECT_EQ((*writer)->global_step(), -1);
    for (size_t s = 0; s < 3; ++s) ASSERT_NO_FATAL_FAILURE(write_step(**writer, kModes[s]));
    ASSERT_TRUE((*writer)->close());
  }
  const auto files = list_files(created / "trial");
  ASSERT_EQ(list_files(resumed / "trial"), files);
  for (const auto& rel : files) {
    EXPECT_EQ(read_file(resumed / "trial" / rel), read_file(created / "trial" / rel)) << rel;
    EXPECT_EQ(read_file(other_worker / rel), read_file(created / "trial" / rel)) << rel;
  }
}

TEST(WriterResume, RefusesAFinishedTrial) {
  ScratchDir dir;
  {
    auto writer = TrialWriter::create(dir.path(), options_for());
    ASSERT_TRUE(writer);
    ASSERT_NO_FATAL_FAILURE(write_step(**writer, Mode::Train));
    ASSERT_TRUE((*writer)->close());
  }
  auto writer = TrialWriter::resume(dir.path(), options_for());
  ASSERT_FALSE(writer);
  EXPECT_EQ(writer.error().code, ErrorCode::Internal) << writer.error().message;
}

TEST(WriterResume, ADamagedIndexOfItsOwnIsAnErrorOthersAreNotRead) {
  ScratchDir dir;
  ASSERT_NO_FATAL_FAILURE(write_first_steps(dir.path()));
  write_garbage(dir / format::index_file_relpath(2, "worker_1"));
  auto writer = TrialWriter::resume(dir.path(), options_for());
  ASSERT_VIGIL_OK(writer);
  writer->reset();

  write_garbage(dir / format::index_file_relpath(2, "worker_0"));
  const auto before = list_files(dir.path());
  writer = TrialWriter::resume(dir.path(), options_for());
  ASSERT_FALSE(writer);
  EXPECT_EQ(writer.error().code, ErrorCode::IndexReader) << writer.error().message;
  EXPECT_EQ(list_files(dir.path()), before);  // a refused resume publishes nothing
}

}  // namespace
}  // namespace vigil::writer
