// The step value cache the evaluator's rules share: its memory budget and generations.
#include <gtest/gtest.h>
#include <vigil/vigil.h>

#include <vector>

#include "plugin_host/step_value_cache.h"
#include "test_support.h"

namespace vigil {
namespace {

using plugin_host::StepValueCache;

TensorValue floats(size_t n) {
  std::vector<float> v(n, 1.5f);
  return TensorValue::copy_of(ElementType::Float32, {int64_t(n)}, std::as_bytes(std::span<const float>(v)));
}

// A key made by the cache it is used with.
StepValueCache::Key key(StepValueCache& cache, std::string_view name, int64_t step, Mode mode = Mode::Global) {
  return cache.key(nullptr, name, step, mode);
}

TEST(StepValueCache, KeepsValuesUpToItsBudgetAndHandsOutTheRest) {
  StepValueCache cache(1000);
  auto a = cache.put(key(cache, "a", 0), floats(200));  // 800 bytes: kept
  auto b = cache.put(key(cache, "b", 0), floats(100));  // 400 more would pass 1000: handed out, not kept
  EXPECT_EQ(a->size(), 200u);
  EXPECT_EQ(b->size(), 100u);
  EXPECT_EQ(cache.find(key(cache, "a", 0)), a);
  EXPECT_EQ(cache.find(key(cache, "b", 0)), nullptr);
  EXPECT_EQ(cache.bytes(), 800u);
  EXPECT_NE(cache.put(key(cache, "c", 0), floats(50)), nullptr);  // 200 bytes still fit
  EXPECT_EQ(cache.bytes(), 1000u);
  cache.clear();
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.find(key(cache, "a", 0)), nullptr);
}

TEST(StepValueCache, AdvanceDropsEarlierGenerationsAndReportsWhatThePreviousOneRead) {
  StepValueCache cache;
  cache.advance(0);
  cache.put(key(cache, "w", 0), floats(4));
  cache.put_reduction(key(cache, "w", 0), VIGIL_RED_MEAN, true, 1.5);
  cache.put(key(cache, "w", 2), floats(4), 2);  // read ahead for step 2
  EXPECT_EQ(cache.find_reduction(key(cache, "w", 0), VIGIL_RED_MEAN, true), 1.5);
  EXPECT_EQ(cache.find_reduction(key(cache, "w", 0), VIGIL_RED_MEAN, false), std::nullopt);

  auto read = cache.advance(1);
  ASSERT_EQ(read.size(), 2u);  // the value and the reduction of generation 0, not the readahead
  EXPECT_EQ(read[0].reduction, StepValueCache::kValue);
  EXPECT_EQ(cache.text(read[0].key.name), "w");
  EXPECT_EQ(read[0].key.worker, StepValueCache::kDefaultWorker);
  EXPECT_EQ(read[1].reduction, VIGIL_RED_MEAN);
  EXPECT_TRUE(read[1].abs);
  EXPECT_EQ(cache.find(key(cache, "w", 0)), nullptr);  // generation 0 dropped
  EXPECT_NE(cache.find(key(cache, "w", 2)), nullptr);  // generation 2 kept
  EXPECT_EQ(cache.bytes(), 16u);
  EXPECT_TRUE(cache.advance(3).empty());  // generation 1 read nothing
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace vigil
