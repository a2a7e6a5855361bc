// The evaluator's readahead of the next step into the shared step value cache.
#include <gtest/gtest.h>
#include <vigil/vigil.h>

#include <chrono>
#include <memory>
#include <optional>

#include "evaluate/step_readahead.h"
#include "plugin_host/step_value_cache.h"
#include "test_support.h"

namespace vigil {
namespace {

using plugin_host::StepValueCache;
using test::ScratchDir;

// Both ways of reading ahead, on the thread and in place, must fill the cache alike.
void repeats_the_previous_steps_reads(std::chrono::steady_clock::duration in_place_below, size_t in_place) {
  ScratchDir dir;
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 5), true);
  auto trial = Trial::open(dir.path());
  ASSERT_VIGIL_OK(trial);
  auto cache = std::make_shared<StepValueCache>();
  const Trial* t = trial->get();
  evaluate::StepReadahead readahead(*trial, cache, in_place_below);

  readahead.begin_step(0, 1);  // nothing read before: nothing to repeat
  EXPECT_EQ(readahead.steps_read_ahead(), 0u);
  // A rule reads w's value and its mean(|w|) at step 0, and the TRAIN mode step 0.
  cache->put(cache->key(t, "w", 0, Mode::Global), *(*trial)->value("w", 0));
  cache->put_reduction(cache->key(t, "w", 0, Mode::Global), VIGIL_RED_MEAN, true, 0.25);
  cache->put(cache->key(t, "w", 0, Mode::Train), *(*trial)->value("w", 0, Mode::Train));
  cache->put(cache->key(t, "w", 5, Mode::Global), *(*trial)->value("w", 5));  // a look at another step: not repeated

  readahead.begin_step(1, 2);  // step 0's reads are repeated for step 2
  readahead.begin_step(2, 3);  // waits for it
  EXPECT_EQ(readahead.steps_read_ahead(), 1u);
  EXPECT_EQ(readahead.steps_read_in_place(), in_place);
  auto v = cache->find(cache->key(t, "w", 2, Mode::Global));
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->as<float>()[0], 2.0f);
  EXPECT_EQ(v->as<float>()[1], 2.5f);
  ASSERT_NE(cache->find(cache->key(t, "w", 2, Mode::Train)), nullptr);
  EXPECT_EQ(cache->find_reduction(cache->key(t, "w", 2, Mode::Global), VIGIL_RED_MEAN, true), 2.25);  // mean(|[2, 2.5]|)
  EXPECT_EQ(cache->find(cache->key(t, "w", 7, Mode::Global)), nullptr);
  // No next step (the last one, or a live trial's step not complete yet): nothing is started.
  readahead.begin_step(5, std::nullopt);
  EXPECT_EQ(readahead.steps_read_ahead(), 1u);
}

TEST(StepReadahead, RepeatsThePreviousStepsReadsForTheNextStepOnItsThread) {
  repeats_the_previous_steps_reads(std::chrono::steady_clock::duration::zero(), 0);
}

TEST(StepReadahead, RepeatsThePreviousStepsReadsForTheNextStepInPlaceWhenThatIsCheaper) {
  repeats_the_previous_steps_reads(std::chrono::hours(1), 1);
}

}  // namespace
}  // namespace vigil
