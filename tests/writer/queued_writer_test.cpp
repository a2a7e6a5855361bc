// QueuedWriter: the hooks' writer thread. What it writes equals the synchronous writer's, a step past
// the budget is dropped whole and published with vigil/dropped_step, the first error stops it and
// is reported (never thrown), and close() drains the queue first.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include "trial/trial.h"
#include "writer/queued_writer.h"
#include "test_support.h"

namespace vigil::writer {
namespace {

namespace fs = std::filesystem;
using test::numeric;
using test::ScratchDir;

// The collections file the hooks publish themselves (QueuedWriter never writes one).
constexpr std::string_view kNoCollections = R"({"collections": {}, "_meta": {"num_workers": 1}})";

QueuedWriterOptions options_with_budget(uint64_t bytes) {
  QueuedWriterOptions o;
  o.writer.builtin_collections = false;
  o.writer.write_collections = false;
  o.max_queue_bytes = bytes;
  return o;
}

TEST(QueuedWriter, WritesValuesReductionsAndShapesOfEveryStep) {
  ScratchDir dir;
  auto w = QueuedWriter::create(dir.path() / "t", options_with_budget(1 << 20));
  ASSERT_VIGIL_OK(w);
  for (int64_t step = 0; step < 20; ++step) {
    ASSERT_TRUE((*w)->begin_step(step, Mode::Train, step));
    const std::vector<float> v{float(step), -2.0f, 4.0f};
    (*w)->write(TensorRequest{"x", true, {{"mean", false}, {"max", true}}, true}, numeric(ElementType::Float32, {3}, v));
    (*w)->end_step();
  }
  (*w)->publish_collections(std::string(kNoCollections));
  ASSERT_TRUE((*w)->close(true));
  EXPECT_EQ((*w)->stats().written_steps, 20u);
  EXPECT_TRUE((*w)->stats().dropped_steps.empty());

  auto t = Trial::open(dir.path() / "t");
  ASSERT_VIGIL_OK(t);
  EXPECT_EQ((*t)->steps(Mode::Train).value().size(), 20u);
  auto v = (*t)->value("x", 7);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->as<float>()[0], 7.0f);
  EXPECT_DOUBLE_EQ((*t)->reduction_value("x", 7, "mean", false).value().value, (7.0 - 2.0 + 4.0) / 3);
  EXPECT_DOUBLE_EQ((*t)->reduction_value("x", 7, "max", true).value().value, 7.0);
  EXPECT_TRUE(fs::exists(dir.path() / "t" / "training_job_end.ts"));
}

TEST(QueuedWriter, AStepPastTheBudgetIsDroppedWholeAndSaysSo) {
  ScratchDir dir;
  auto w = QueuedWriter::create(dir.path() / "t", options_with_budget(1000));
  ASSERT_TRUE(w);
  const std::vector<float> small(10, 1.0f), big(1000, 1.0f);  // 40 bytes fit, 4000 do not
  ASSERT_TRUE((*w)->begin_step(0, Mode::Train, 0));
  (*w)->write(TensorRequest{"small"}, numeric(ElementType::Float32, {10}, small));
  (*w)->end_step();
  ASSERT_TRUE((*w)->begin_step(1, Mode::Train, 1));
  (*w)->write(TensorRequest{"small"}, numeric(ElementType::Float32, {10}, small));
  (*w)->write(TensorRequest{"big"}, numeric(ElementType::Float32, {1000}, big));
  (*w)->write(TensorRequest{"after"}, numeric(ElementType::Float32, {10}, small));
  (*w)->end_step();
  EXPECT_FALSE((*w)->begin_step(2, Mode::Train, 2, /*expected_bytes=*/5000));
  (*w)->write(TensorRequest{"small"}, numeric(ElementType::Float32, {10}, small));
  (*w)->end_step();
  (*w)->publish_collections(std::string(kNoCollections));
  ASSERT_TRUE((*w)->close(true));
  EXPECT_EQ((*w)->stats().dropped_steps, (std::vector<int64_t>{1, 2}));

  auto t = Trial::open(dir.path() / "t");
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)->steps().value(), (std::vector<int64_t>{0, 1, 2}));
  auto names = [&](int64_t step) { return (*t)->tensor_names({.step = step}).value(); };
  EXPECT_EQ(names(0), std::vector<std::string>{"small"});
  EXPECT_EQ(names(1), (std::vector<std::string>{"small", std::string(kDroppedStepTensor)}));
  EXPECT_EQ(names(2), std::vector<std::string>{std::string(kDroppedStepTensor)});
}

TEST(QueuedWriter, TheFirstErrorStopsTheThreadAndIsReported) {
  ScratchDir dir;
  auto w = QueuedWriter::create(dir.path() / "t", options_with_budget(1 << 20));
  ASSERT_TRUE(w);
  // The trial folder becomes a file under the writer: its next publication fails.
  fs::remove_all(dir.path() / "t");
  std::ofstream(dir.path() / "t") << "not a folder";
  const std::vector<float> v(4, 1.0f);
  for (int64_t step = 0; step < 3; ++step) {
    (*w)->begin_step(step, Mode::Train, step);
    (*w)->write(TensorRequest{"x"}, numeric(ElementType::Float32, {4}, v));
    (*w)->end_step();
  }
  auto closed = (*w)->close(true);
  ASSERT_FALSE(closed);
  ASSERT_TRUE((*w)->error().has_value());
  EXPECT_EQ((*w)->error()->message, closed.error().message);
  EXPECT_FALSE((*w)->close(true));  // idempotent: the same error again, nothing thrown
}

TEST(QueuedWriter, DestroyingAnOpenWriterPublishesWhatWasQueuedWithoutTheEndMarker) {
  ScratchDir dir;
  {
    auto w = QueuedWriter::create(dir.path() / "t", options_with_budget(1 << 20));
    ASSERT_TRUE(w);
    const std::vector<double> v{1, 2};
    for (int64_t step = 0; step < 5; ++step) {
      (*w)->begin_step(step, Mode::Global, step);
      (*w)->write(TensorRequest{"x"}, numeric(ElementType::Float64, {2}, v));
      (*w)->end_step();
    }
    (*w)->publish_collections(std::string(kNoCollections));
  }
  EXPECT_FALSE(fs::exists(dir.path() / "t" / "training_job_end.ts"));
  auto t = Trial::open(dir.path() / "t");
  ASSERT_TRUE(t);
  EXPECT_EQ((*t)->steps(Mode::Global, true).value().size(), 5u);
}

// The writer thread is not woken at every value (hooks queue ~100 a step): it is woken when a step
// ends, and within a step once a few MiB are queued. An ended step is written without waiting for
// the next one or for close(), and a large step drains while it is still being queued.
// A new writer whose thread has started and gone to sleep on the empty queue (values queued before it
// starts are taken without any wake).
std::unique_ptr<QueuedWriter> idle_writer(const fs::path& dir, uint64_t budget) {
  using std::chrono_literals::operator""s;
  const size_t before = test::threads_named("vigil-writer");
  auto w = QueuedWriter::create(dir, options_with_budget(budget));
  if (!w || !test::wait_for_threads_named("vigil-writer", before + 1, 30s)) return nullptr;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return std::move(*w);
}

bool eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 3000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(QueuedWriter, AnEndedStepIsWrittenWithoutWaitingForTheNextOrForClose) {
  ScratchDir dir;
  auto w = idle_writer(dir.path() / "t", 1 << 20);
  ASSERT_TRUE(w);
  const std::vector<float> v(4, 1.0f);
  w->begin_step(0, Mode::Train, 0);
  w->write(TensorRequest{"x"}, numeric(ElementType::Float32, {4}, v));
  w->end_step();
  EXPECT_TRUE(eventually([&] { return w->stats().written_steps == 1; }));
  ASSERT_VIGIL_OK(w->close(true));
}

TEST(QueuedWriter, ALargeStepDrainsWhileItIsStillBeingQueued) {
  ScratchDir dir;
  auto w = idle_writer(dir.path() / "t", uint64_t(64) << 20);
  ASSERT_TRUE(w);
  const std::vector<float> v(uint64_t(1) << 18, 1.0f);  // 1 MiB
  w->begin_step(0, Mode::Train, 0);
  for (int i = 0; i < 6; ++i)
    w->write(TensorRequest{std::string(1, char('a' + i))}, numeric(ElementType::Float32, {int64_t(v.size())}, v));
  // The step has not ended: only a wake within the step lets the writer take values from the queue.
  EXPECT_TRUE(eventually([&] { return w->stats().queued_bytes < (uint64_t(3) << 20); }));
  w->end_step();
  ASSERT_VIGIL_OK(w->close(true));
  EXPECT_TRUE(w->stats().dropped_steps.empty());
}

// The thread is "vigil-writer" while it runs, and joined by close(), by close() after the first
// error, and by the destructor of a writer never closed: none outlives its writer (a joinable
// std::thread at destruction is std::terminate, in the user's training process).
TEST(QueuedWriter, ItsNamedThreadEndsWithCloseAfterAnErrorAndWithTheDestructor) {
  using std::chrono_literals::operator""s;
  ScratchDir dir;
  const size_t before = test::threads_named("vigil-writer");
  auto closed = QueuedWriter::create(dir.path() / "closed", options_with_budget(1 << 20));
  ASSERT_TRUE(closed);
  EXPECT_TRUE(test::wait_for_threads_named("vigil-writer", before + 1, 30s));
  ASSERT_VIGIL_OK((*closed)->close(true));
  EXPECT_EQ(test::threads_named("vigil-writer"), before);

  auto failed = QueuedWriter::create(dir.path() / "failed", options_with_budget(1 << 20));
  ASSERT_TRUE(failed);
  fs::remove_all(dir.path() / "failed");
  std::ofstream(dir.path() / "failed") << "not a folder";
  (*failed)->publish_collections(std::string(kNoCollections));
  EXPECT_TRUE(test::wait_for_threads_named("vigil-writer", before + 1, 30s));
  for (int i = 0; i < 3000 && !(*failed)->error(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE((*failed)->error().has_value());
  EXPECT_FALSE((*failed)->close(false));
  EXPECT_EQ(test::threads_named("vigil-writer"), before);

  {
    auto dropped = QueuedWriter::create(dir.path() / "dropped", options_with_budget(1 << 20));
    ASSERT_TRUE(dropped);
    EXPECT_TRUE(test::wait_for_threads_named("vigil-writer", before + 1, 30s));
  }
  EXPECT_EQ(test::threads_named("vigil-writer"), before);
}

}  // namespace
}  // namespace vigil::writer
