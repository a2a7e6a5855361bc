// Sharded tensors: a worker's layout file (format/shard_layout.h), refused when it is not one, and
// the whole tensor put together from shards (trial/shard_assembly.h): Shard along each dimension,
// replicas counted once, and every way the shards can fail to make one tensor.
#include "trial/shard_assembly.h"

#include <gtest/gtest.h>

#include <numeric>

#include "format/shard_layout.h"

namespace vigil {
namespace {

using format::ShardPlacement;

// A float32 block of `shape` filled from the whole tensor's row-major numbering (global shape `global`,
// starting at `offsets`), so that a correct assembly is 0, 1, 2, ... in order.
Shard block(std::vector<int64_t> global, std::vector<int64_t> offsets, std::vector<int64_t> shape) {
  std::vector<float> values;
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d) flat = flat * global[d] + offsets[d] + index[d];
    values.push_back(float(flat));
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return Shard{TensorValue::copy_of(ElementType::Float32, shape, std::as_bytes(std::span(values))),
               ShardPlacement{std::move(global), std::move(offsets)}};
}

std::vector<float> floats(const TensorValue& v) {
  std::vector<float> out(v.size());
  std::memcpy(out.data(), v.bytes().data(), v.bytes().size());
  return out;
}

std::vector<float> counting(size_t n) {
  std::vector<float> out(n);
  std::iota(out.begin(), out.end(), 0.0f);
  return out;
}

TEST(ShardAssembly, ShardsAlongAnyDimensionMakeTheWholeTensor) {
  // Shard(0) of an (8, 4) tensor on 2 workers, Shard(1) of a (2, 8) one, and an uneven Shard(0)
  // (torch.chunk: 3 rows as 2 + 1).
  auto rows = assemble_shards("w", {block({8, 4}, {0, 0}, {4, 4}), block({8, 4}, {4, 0}, {4, 4})});
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ(rows->shape(), (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(floats(*rows), counting(32));
  auto cols = assemble_shards("w", {block({2, 8}, {0, 4}, {2, 4}), block({2, 8}, {0, 0}, {2, 4})});
  ASSERT_TRUE(cols) << cols.error().message;
  EXPECT_EQ(floats(*cols), counting(16));
  auto uneven = assemble_shards("w", {block({3, 2, 2}, {0, 0, 0}, {2, 2, 2}), block({3, 2, 2}, {2, 0, 0}, {1, 2, 2})});
  ASSERT_TRUE(uneven) << uneven.error().message;
  EXPECT_EQ(floats(*uneven), counting(12));
}

TEST(ShardAssembly, ReplicasCountOnceAndAScalarIsItsOwnShard) {
  auto replicated = assemble_shards("b", {block({2}, {0}, {2}), block({2}, {0}, {2})});
  ASSERT_TRUE(replicated) << replicated.error().message;
  EXPECT_EQ(floats(*replicated), counting(2));
  auto scalar = assemble_shards("s", {block({}, {}, {})});
  ASSERT_TRUE(scalar) << scalar.error().message;
  EXPECT_EQ(scalar->shape(), std::vector<int64_t>{});
}

TEST(ShardAssembly, ShardsThatDoNotMakeOneTensorAreCorrupt) {
  auto expect_corrupt = [](const Result<TensorValue>& r, std::string_view why) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, ErrorCode::CorruptData);
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
  };
  expect_corrupt(assemble_shards("w", {block({8, 4}, {0, 0}, {4, 4})}), "hold 16 elements, the tensor 32");  // a shard missing
  expect_corrupt(assemble_shards("w", {block({8, 4}, {6, 0}, {4, 4}), block({8, 4}, {0, 0}, {4, 4})}), "passes the end");
  expect_corrupt(assemble_shards("w", {block({4}, {0}, {3}), block({4}, {1}, {1})}), "overlap");
  expect_corrupt(assemble_shards("w", {block({4}, {0}, {2}), block({2, 2}, {1, 0}, {1, 2})}), "global shape");
  Shard doubles = block({4}, {2}, {2});
  const std::vector<double> d{2, 3};
  doubles.value = TensorValue::copy_of(ElementType::Float64, {2}, std::as_bytes(std::span(d)));
  expect_corrupt(assemble_shards("w", {block({4}, {0}, {2}), doubles}), "different dtypes");
  expect_corrupt(assemble_shards("w", {}), "no shard");
}

TEST(ShardLayout, ParsesAWorkersLayoutAndRefusesWhatIsNotOne) {
  auto layout = format::parse_shard_layout(
      R"({"version": 1, "worker": "worker_1", "tensors": {"Sequential_0.weight": {"global_shape": [8, 4], "offsets": [4, 0]}}})",
      "shards/worker_1.json");
  ASSERT_TRUE(layout) << layout.error().message;
  EXPECT_EQ(layout->worker, "worker_1");
  EXPECT_EQ(layout->tensors.at("Sequential_0.weight"), (ShardPlacement{{8, 4}, {4, 0}}));
  auto again = format::parse_shard_layout(format::shard_layout_json(*layout), "again");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->tensors, layout->tensors);
  for (const char* bad : {
           "", "[]", R"({"version": 2, "worker": "w", "tensors": {}})", R"({"version": 1, "tensors": {}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [4]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [4], "offsets": [5]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [4, 2], "offsets": [0]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [-1], "offsets": [0]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [1.5], "offsets": [0]}}})"}) {
    auto r = format::parse_shard_layout(bad, "shards/w.json");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::CorruptData) << bad;
  }
  const std::string deep(10000, '[');
  EXPECT_FALSE(format::parse_shard_layout(deep, "deep"));
}

}  // namespace
}  // namespace vigil
