// The record buffer pool behind Trial reads: large buffers come back when the last value viewing
// them is released and are handed out again; small ones and buffers still in use never are.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "trial/record_reader.h"

namespace vigil {
namespace {

constexpr size_t kLarge = size_t(4) << 20;

TEST(RecordBufferPool, ALargeBufferIsReusedOnceReleased) {
  auto pool = std::make_shared<RecordBufferPool>();
  auto first = pool->get(kLarge);
  ASSERT_GE(first->size(), kLarge);
  const std::byte* address = first->data();
  auto second = pool->get(kLarge);  // the first is still in use
  EXPECT_NE(second->data(), address);
  first.reset();
  EXPECT_EQ(pool->kept(), 1u);
  auto third = pool->get(kLarge - 100);  // fits in the released one
  EXPECT_EQ(third->data(), address);
  EXPECT_EQ(pool->kept(), 0u);
}

TEST(RecordBufferPool, BuffersTooSmallOrTooLargeForTheRequestAreNotHandedOut) {
  auto pool = std::make_shared<RecordBufferPool>();
  pool->get(kLarge).reset();
  ASSERT_EQ(pool->kept(), 1u);
  EXPECT_GE(pool->get(2 * kLarge)->size(), 2 * kLarge);  // too small: a new one
  EXPECT_EQ(pool->kept(), 2u);  // ...which came back too
  auto small = pool->get(kLarge / 4);  // would waste more than half of either
  EXPECT_LT(small->size(), kLarge);
}

TEST(RecordBufferPool, SmallBuffersAreNotKeptAndAtMostAFewLargeOnesAre) {
  auto pool = std::make_shared<RecordBufferPool>();
  pool->get(RecordBufferPool::kMinPooledBytes - 1).reset();
  EXPECT_EQ(pool->kept(), 0u);
  std::vector<std::shared_ptr<AlignedBuffer>> held;
  for (size_t i = 0; i < RecordBufferPool::kMaxKept + 3; ++i) held.push_back(pool->get(kLarge));
  held.clear();
  EXPECT_EQ(pool->kept(), RecordBufferPool::kMaxKept);
}

TEST(RecordBufferPool, ABufferOutlivesItsPool) {
  auto pool = std::make_shared<RecordBufferPool>();
  auto buffer = pool->get(kLarge);
  pool.reset();  // the Trial went away while a value still views its record
  buffer->data()[0] = std::byte{1};
  EXPECT_EQ(buffer->data()[0], std::byte{1});
}

}  // namespace
}  // namespace vigil
