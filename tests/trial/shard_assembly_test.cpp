// Sharded tensors: a worker's layout file (format/shard_layout.h), refused when it is not one; the
// whole tensor put together from shards (trial/shard_assembly.h): Shard along each dimension,
// replicas counted once, and every way the shards can fail to make one tensor; and the whole
// tensor's reductions merged from per-shard statistics (trial/reductions.h) without the values.
#include "trial/shard_assembly.h"

#include <gtest/gtest.h>

#include <numeric>

#include <cmath>
#include <random>

#include "format/shard_layout.h"
#include "trial/reductions.h"

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


TEST(ShardAssembly, FlatRunsOfTheFlattenedTensorMakeTheWholeTensor) {
  // FSDP1: a (3, 8) parameter flattened, worker 0 holding elements 0-13, worker 1 elements 14-23
  // (their flat parameters hold the bias too, and padding); the runs are saved 1-D.
  auto run = [](int64_t first, int64_t n) {
    std::vector<float> values(static_cast<size_t>(n), 0.0f);
    std::iota(values.begin(), values.end(), float(first));
    ShardPlacement p{{3, 8}, {}, {n}, first};
    return Shard{TensorValue::copy_of(ElementType::Float32, {n}, std::as_bytes(std::span(values))), p};
  };
  auto whole = assemble_shards("w", {run(14, 10), run(0, 14)});
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(whole->shape(), (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(floats(*whole), counting(24));
  auto gap = assemble_shards("w", {run(0, 14), run(15, 9)});
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().code, ErrorCode::CorruptData);
  // A box and a flat run of the same 2-D tensor are not one layout.
  auto mixed = assemble_shards("w", {run(0, 12), block({3, 8}, {1, 0}, {2, 8})});
  ASSERT_FALSE(mixed);
  // The merged reductions of flat runs are the whole tensor's too.
  std::vector<Shard> shards{run(0, 14), run(14, 10)};
  for (ReductionOp op : {ReductionOp::Mean, ReductionOp::Variance, ReductionOp::Max}) {
    auto merged = *reduction_statistics(shards[0].value, op, false);
    ASSERT_TRUE(merge_reduction_statistics(merged, *reduction_statistics(shards[1].value, op, false)));
    EXPECT_NEAR(finish_reduction(merged)->value, compute_reduction(*whole, op, false)->value, 1e-5) << reduction_name(op);
  }
}

TEST(ShardAssembly, AGlobalShapeThatWrapsIsRefusedBeforeAnyAllocation) {
  // 2^32 * 2^32 elements wrap to 0 in 64 bits: a hostile layout must not make a tiny "whole" tensor.
  const int64_t big = int64_t(1) << 32;
  auto r = distinct_shards("w", {big, big}, {ShardExtent{{0, 0}, {0, 0}}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("too large"), std::string::npos) << r.error().message;
}

// Reductions of a sharded tensor, merged from each distinct shard's statistics, equal those of the
// whole tensor (computed from its assembled value) within float64 rounding: for every op, on x and
// |x|, for uneven shards with a replica, in float64, float32 and int32.
template <typename T>
std::vector<Shard> random_shards(ElementType type, std::mt19937& rng) {
  // A (7, 5) tensor as rows 0-3 and 4-6, the second shard replicated on a third worker.
  std::normal_distribution<double> normal(3.0, 10.0);
  std::vector<Shard> out;
  for (auto [first, rows] : {std::pair{0, 4}, std::pair{4, 3}}) {
    std::vector<T> values(size_t(rows) * 5);
    for (auto& x : values) x = T(normal(rng));
    out.push_back(Shard{TensorValue::copy_of(type, {rows, 5}, std::as_bytes(std::span(values))),
                        ShardPlacement{{7, 5}, {first, 0}, {rows, 5}}});
  }
  out.push_back(out.back());
  return out;
}

void expect_merged_reductions_equal_the_whole(const std::vector<Shard>& shards) {
  auto whole = assemble_shards("w", shards);
  ASSERT_TRUE(whole) << whole.error().message;
  std::vector<ShardExtent> extents;
  for (const auto& s : shards) extents.push_back({s.placement.offsets, s.value.shape()});
  auto distinct = distinct_shards("w", {7, 5}, extents);
  ASSERT_TRUE(distinct) << distinct.error().message;
  ASSERT_EQ(distinct->size(), 2u);  // the replica counts once
  for (ReductionOp op : kAllReductionOps) {
    for (bool abs : {false, true}) {
      auto expected = compute_reduction(*whole, op, abs);
      ASSERT_TRUE(expected) << expected.error().message;
      // From the shards' values, and from the reductions each shard would have saved.
      std::optional<ReductionStatistics> from_values, from_saved;
      for (size_t i : *distinct) {
        auto part = reduction_statistics(shards[i].value, op, abs);
        ASSERT_TRUE(part);
        auto saved_part = reduction_statistics_from_saved(op, abs, shards[i].value.size(),
            [&](ReductionOp what, bool a) -> std::optional<std::pair<double, ElementType>> {
              auto r = compute_reduction(shards[i].value, what, a);
              if (!r) return std::nullopt;
              return std::pair{r->value, r->dtype};
            });
        ASSERT_TRUE(saved_part) << reduction_name(op);
        if (!from_values) {
          from_values = *part;
          from_saved = *saved_part;
        } else {
          ASSERT_TRUE(merge_reduction_statistics(*from_values, *part));
          ASSERT_TRUE(merge_reduction_statistics(*from_saved, *saved_part));
        }
      }
      for (const auto& merged : {*from_values, *from_saved}) {
        auto got = finish_reduction(merged);
        ASSERT_TRUE(got) << got.error().message;
        EXPECT_EQ(got->dtype, expected->dtype) << reduction_name(op);
        // A saved float32 reduction was rounded to float32 before the merge (as the hook saves it).
        const double tolerance = (expected->dtype == ElementType::Float32 ? 1e-6 : 1e-12) *
                                 std::max(1.0, std::abs(expected->value));
        if (op == ReductionOp::Prod) continue;  // a product of 35 normals: checked for dtype only
        EXPECT_NEAR(got->value, expected->value, tolerance) << reduction_name(op) << (abs ? " abs" : "");
      }
    }
  }
}

TEST(ShardReductions, MergedPerShardStatisticsEqualTheWholeTensors) {
  std::mt19937 rng(7);
  expect_merged_reductions_equal_the_whole(random_shards<double>(ElementType::Float64, rng));
  expect_merged_reductions_equal_the_whole(random_shards<float>(ElementType::Float32, rng));
  expect_merged_reductions_equal_the_whole(random_shards<int32_t>(ElementType::Int32, rng));
}

TEST(ShardReductions, ChanMergeKeepsTheVarianceOfShardsWithFarApartMeans) {
  // Naive sum-of-squares merging loses everything here (the variance is 1e-4 around a mean of 1e8);
  // Chan's merge of per-shard (mean, M2) keeps it.
  std::vector<double> a{1e8 - 0.01, 1e8 + 0.01}, b{1e8 - 0.01, 1e8 + 0.01, 1e8};
  auto sa = reduction_statistics(TensorValue::copy_of(ElementType::Float64, {2}, std::as_bytes(std::span(a))), ReductionOp::Variance, false);
  auto sb = reduction_statistics(TensorValue::copy_of(ElementType::Float64, {3}, std::as_bytes(std::span(b))), ReductionOp::Variance, false);
  ASSERT_TRUE(sa && sb);
  ASSERT_TRUE(merge_reduction_statistics(*sa, *sb));
  auto v = finish_reduction(*sa);
  ASSERT_TRUE(v);
  EXPECT_NEAR(v->value, 4 * 1e-4 / 5, 1e-9);
}

TEST(ShardReductions, AShardWithoutWhatTheMergeNeedsSaysSo) {
  // A worker that saved only l2 cannot give a variance, nor a mean.
  auto only_l2 = [](ReductionOp what, bool) -> std::optional<std::pair<double, ElementType>> {
    if (what == ReductionOp::L2) return std::pair{2.0, ElementType::Float32};
    return std::nullopt;
  };
  EXPECT_FALSE(reduction_statistics_from_saved(ReductionOp::Variance, false, 4, only_l2));
  EXPECT_FALSE(reduction_statistics_from_saved(ReductionOp::Mean, false, 4, only_l2));
  auto l2 = reduction_statistics_from_saved(ReductionOp::L2, false, 4, only_l2);
  ASSERT_TRUE(l2);
  auto other = *l2;
  ASSERT_TRUE(merge_reduction_statistics(*l2, other));
  EXPECT_NEAR(finish_reduction(*l2)->value, std::sqrt(8.0), 1e-6);
  // Parts in different dtypes do not merge.
  other.result_dtype = ElementType::Float64;
  EXPECT_FALSE(merge_reduction_statistics(*l2, other));
}

TEST(ShardLayout, ParsesAWorkersLayoutAndRefusesWhatIsNotOne) {
  // Each accepted layout is the placement expected, and what the writer makes of it reads back the same.
  auto accepts = [](const char* tensor_json, const ShardPlacement& want) {
    const std::string text = std::string(R"({"version": 1, "worker": "worker_1", "tensors": {"t": )") + tensor_json + "}}";
    auto layout = format::parse_shard_layout(text, "shards/worker_1.json");
    ASSERT_TRUE(layout) << layout.error().message;
    EXPECT_EQ(layout->worker, "worker_1");
    EXPECT_EQ(layout->tensors.at("t"), want) << tensor_json;
    auto again = format::parse_shard_layout(format::shard_layout_json(*layout), "again");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->tensors, layout->tensors) << tensor_json;
  };
  accepts(R"({"global_shape": [8, 4], "offsets": [4, 0]})", ShardPlacement{{8, 4}, {4, 0}});
  // The shard's own shape, when the worker wrote it.
  accepts(R"({"global_shape": [7, 5], "offsets": [4, 0], "shape": [3, 5]})", ShardPlacement{{7, 5}, {4, 0}, {3, 5}});
  // FSDP1's flat runs.
  accepts(R"({"global_shape": [3, 8], "flat_offset": 14, "shape": [10]})", ShardPlacement{{3, 8}, {}, {10}, 14});
  for (const char* bad : {
           "", "[]", R"({"version": 2, "worker": "w", "tensors": {}})",
           R"({"version": "num_workers"})",  // found by shard_layout_fuzzer: a string version threw R"({"version": 1, "tensors": {}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [4]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [4], "offsets": [5]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [4, 2], "offsets": [0]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [-1], "offsets": [0]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [1.5], "offsets": [0]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [7], "offsets": [4], "shape": [4]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [7, 5], "offsets": [4, 0], "shape": [3]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [3, 8], "flat_offset": 14, "shape": [11]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [3, 8], "flat_offset": 14}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [3, 8], "flat_offset": -1, "shape": [1]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [3, 8], "flat_offset": 0, "offsets": [0, 0], "shape": [1]}}})",
           R"({"version": 1, "worker": "w", "tensors": {"t": {"global_shape": [4294967296, 4294967296], "flat_offset": 0, "shape": [1]}}})"}) {
    auto r = format::parse_shard_layout(bad, "shards/w.json");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::CorruptData) << bad;
  }
  const std::string deep(10000, '[');
  EXPECT_FALSE(format::parse_shard_layout(deep, "deep"));
}

}  // namespace
}  // namespace vigil
