// Refusals and file-system failures: every one is a vigil::Error, never an exception or a crash.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "format/trial_layout.h"
#include "test_support.h"

namespace vigil::writer {
namespace {

namespace fs = std::filesystem;
using test::list_files;
using test::numeric;
using test::ScratchDir;

void touch(const fs::path& p) { std::ofstream(p).put('x'); }

const std::vector<float> kValue{1.0f, 2.0f};
TensorData value() { return numeric(ElementType::Float32, {2}, kValue); }

TEST(WriterErrors, CreateRefusesAFinishedTrial) {
  ScratchDir dir;
  std::ofstream(dir / "training_job_end.ts").flush();
  auto writer = TrialWriter::create(dir.path());
  ASSERT_FALSE(writer);
  EXPECT_EQ(writer.error().code, ErrorCode::Internal);
  EXPECT_NE(writer.error().message.find(dir.path().string()), std::string::npos) << writer.error().message;
  EXPECT_EQ(list_files(dir.path()), std::vector<std::string>{"training_job_end.ts"});
}

TEST(WriterErrors, AClosedTrialCannotBeReopened) {
  ScratchDir dir;
  {
    auto writer = TrialWriter::create(dir.path());
    ASSERT_TRUE(writer);
    ASSERT_TRUE((*writer)->close());
    ASSERT_TRUE((*writer)->close());  // idempotent
    EXPECT_FALSE((*writer)->begin_step(Mode::Train));
  }
  EXPECT_FALSE(TrialWriter::create(dir.path()));
}

TEST(WriterErrors, UnusableDirectoryIsAnIoError) {
  ScratchDir dir;
  touch(dir / "file");
  auto writer = TrialWriter::create(dir / "file/trial");
  ASSERT_FALSE(writer);
  EXPECT_EQ(writer.error().code, ErrorCode::Io);
  EXPECT_NE(writer.error().message.find("file"), std::string::npos) << writer.error().message;
}

TEST(WriterErrors, UncreatableDirectoryIsAnIoError) {
  // Nobody, root included, can create folders inside /proc.
  auto writer = TrialWriter::create("/proc/vigil-writer-test/trial");
  ASSERT_FALSE(writer);
  EXPECT_EQ(writer.error().code, ErrorCode::Io);
  EXPECT_NE(writer.error().message.find("/proc/vigil-writer-test"), std::string::npos) << writer.error().message;
}

TEST(WriterErrors, BlockedEventFolderFailsTheStepOnly) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  touch(dir / "events");  // a file where the events folder belongs
  ASSERT_TRUE(w.begin_step(Mode::Train));
  auto saved = w.save_tensor("a", value());
  ASSERT_FALSE(saved);
  EXPECT_EQ(saved.error().code, ErrorCode::Io);
  fs::remove(dir / "events");
  EXPECT_TRUE(w.end_step());  // nothing was recorded in this step
  EXPECT_FALSE(fs::exists(dir / "index"));

  ASSERT_TRUE(w.begin_step(Mode::Train));
  ASSERT_TRUE(w.write_tensor("a", value()));
  ASSERT_TRUE(w.end_step());
  EXPECT_TRUE(fs::exists(dir / format::index_file_relpath(1, "worker_0")));
}

TEST(WriterErrors, FailedWriteAbandonsTheStep) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  ASSERT_TRUE(w.begin_step(Mode::Train));
  // The step's .tmp event file is a link to /dev/full: writes fail with ENOSPC.
  const fs::path tmp = dir / (format::event_file_relpath(0, "worker_0") + ".tmp");
  fs::create_directories(tmp.parent_path());
  fs::create_symlink("/dev/full", tmp);
  auto saved = w.save_tensor("a", value());
  ASSERT_FALSE(saved);
  EXPECT_EQ(saved.error().code, ErrorCode::Io);
  EXPECT_FALSE(w.save_tensor("b", value()));  // the step's file no longer matches its index
  auto ended = w.end_step();
  ASSERT_FALSE(ended);
  EXPECT_EQ(ended.error().code, ErrorCode::Io);
  EXPECT_FALSE(fs::exists(dir / format::index_file_relpath(0, "worker_0")));
  EXPECT_FALSE(fs::exists(dir / format::event_file_relpath(0, "worker_0")));
}

TEST(WriterErrors, BlockedIndexAndCollectionsFoldersAreIoErrors) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  touch(dir / "index");
  touch(dir / "collections");
  ASSERT_TRUE(w.begin_step(Mode::Train));
  ASSERT_TRUE(w.save_tensor("a", value()));
  auto ended = w.end_step();
  ASSERT_FALSE(ended);
  EXPECT_EQ(ended.error().code, ErrorCode::Io);
  auto closed = w.close();
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code, ErrorCode::Io);
  EXPECT_TRUE(fs::exists(dir / "training_job_end.ts"));
}

TEST(WriterErrors, SavesOutsideAStepAreRefused) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  const std::vector<int64_t> shape{2};
  for (auto r : {w.save_tensor("a", value()), w.write_tensor("a", value()), w.write_shape("a", shape),
                 w.save_scalar("a", 1.0), w.write_reduction("a", "min", false, value())}) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
  }
  EXPECT_FALSE(w.should_save("a"));
  ASSERT_TRUE(w.begin_step(Mode::Train));
  ASSERT_TRUE(w.end_step());
  EXPECT_FALSE(w.save_tensor("a", value()));  // the step has ended
}

TEST(WriterErrors, CloseRecreatesARemovedTrialFolderForTheEndMarker) {
  // smdebug's close makes the folder again and writes the marker: a reader waiting for the end
  // of a run whose folder was cleared must still see it end.
  ScratchDir dir;
  auto writer = TrialWriter::create(dir / "trial");
  ASSERT_TRUE(writer);
  auto& w = **writer;
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(w.begin_step(Mode::Train));
    ASSERT_TRUE(w.write_tensor("a", value()));
    ASSERT_TRUE(w.end_step());
  }
  fs::remove_all(dir / "trial");
  ASSERT_TRUE(w.close());
  EXPECT_EQ(list_files(dir / "trial"), std::vector<std::string>{"training_job_end.ts"});
}

TEST(WriterErrors, StepsOnlyMoveForward) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  ASSERT_TRUE(w.begin_step_at(5, Mode::Train, 2));
  ASSERT_TRUE(w.write_tensor("a", value()));
  // Refused while step 5 is open with data, without losing it.
  for (int64_t g : {5, 4, -1}) {
    auto r = w.begin_step_at(g, Mode::Train, 0);
    ASSERT_FALSE(r) << g;
    EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
  }
  ASSERT_TRUE(w.write_tensor("b", value()));
  ASSERT_TRUE(w.end_step());
  EXPECT_FALSE(w.begin_step_at(5, Mode::Eval, 0));
  ASSERT_TRUE(w.begin_step_at(6, Mode::Eval, 0));
  ASSERT_TRUE(w.begin_step(Mode::Train));
  EXPECT_EQ(w.global_step(), 7);
  EXPECT_EQ(w.mode_step(), 3);
}

TEST(WriterErrors, InconsistentDataIsRefused) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  ASSERT_TRUE(w.begin_step(Mode::Train));
  auto expect_invalid = [](Result<void> r) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument) << r.error().message;
  };
  expect_invalid(w.save_tensor("a", numeric(ElementType::Float32, {3}, kValue)));
  expect_invalid(w.write_tensor("a", numeric(ElementType::Float64, {2}, kValue)));
  expect_invalid(w.write_tensor("a", numeric(ElementType::Float32, {-2}, kValue)));
  const std::vector<std::string> s{"a", "b"};
  expect_invalid(w.write_tensor("s", TensorData{ElementType::String, {3}, {}, s}));
  expect_invalid(w.write_tensor("s", TensorData{ElementType::String, {1, 2}, {}, s}));
  expect_invalid(w.write_reduction("a", "median", false, value()));
  const std::vector<int64_t> bad_shape{-1};
  expect_invalid(w.write_shape("a", bad_shape));
  ASSERT_TRUE(w.end_step());
  EXPECT_EQ(list_files(dir.path()), std::vector<std::string>{});

  format::CollectionConfig c;
  c.name = "broken";
  c.include_regex = {"([unclosed"};
  expect_invalid(w.add_collection(c));
  c.include_regex = {"ok"};
  c.reduction_config = format::ReductionConfig{.save_raw_tensor = true, .reductions = {{"median", false}}, .save_shape = false};
  expect_invalid(w.add_collection(c));
}

TEST(WriterErrors, ReductionFailuresAreErrors) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  format::CollectionConfig c;
  c.name = "reduced";
  c.include_regex = {"^c"};
  c.reduction_config = format::ReductionConfig{.save_raw_tensor = true, .reductions = {{"mean", false}}, .save_shape = false};
  ASSERT_TRUE(w.add_collection(c));
  ASSERT_TRUE(w.begin_step(Mode::Train));
  const std::vector<float> complex{1, 2, 3, 4};  // two complex64 values
  auto r = w.save_tensor("c", numeric(ElementType::Complex64, {2}, complex));
  ASSERT_FALSE(r);  // smdebug has no plain mean of complex values
  EXPECT_EQ(r.error().code, ErrorCode::NotSupported);
}

}  // namespace
}  // namespace vigil::writer
