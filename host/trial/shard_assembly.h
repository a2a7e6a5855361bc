// A sharded tensor put together from its workers' shards (FSDP2's parameters and gradients, tensor
// parallelism's DTensors), by the layout each worker wrote (format/shard_layout.h).
#pragma once

#include <string_view>
#include <vector>

#include "common/error.h"
#include "format/shard_layout.h"
#include "trial/tensor_value.h"

namespace vigil {

struct Shard {
  TensorValue value;                // the worker's saved value: its shard
  format::ShardPlacement placement;  // where it sits in the whole tensor
};

// Where a shard sits: its first element's offsets and its shape.
struct ShardExtent {
  std::vector<int64_t> offsets;
  std::vector<int64_t> shape;
};

// The space a shard is a box of: the global shape, or, for a run of the flattened tensor (FSDP1's
// flat_offset), the flattened tensor [n]. `shard_shape` is the saved shard's shape.
std::vector<int64_t> shard_space(const format::ShardPlacement& placement);
ShardExtent shard_extent(const format::ShardPlacement& placement, const std::vector<int64_t>& shard_shape);

// The shards that make the whole tensor once each, as indexes into `shards`: a replica (the offsets
// and shape of another) counts once. Every shard must lie within `global_shape`, the distinct ones
// must not overlap and together must cover every element. CorruptData naming `name` otherwise.
// Checked on extents only, so that reductions can merge per-shard statistics without the values.
[[nodiscard]] Result<std::vector<size_t>> distinct_shards(std::string_view name, const std::vector<int64_t>& global_shape,
                                                          const std::vector<ShardExtent>& shards);

// The whole tensor (put together in its shard space, then given the global shape). Each shard must lie within the global shape and share the others' dtype and
// global shape; shards with the same offsets and shape are replicas and count once; together the
// shards must cover every element exactly once. CorruptData naming `name` otherwise (a worker's
// shard missing at the step included); NotSupported for strings.
[[nodiscard]] Result<TensorValue> assemble_shards(std::string_view name, const std::vector<Shard>& shards);

}  // namespace vigil
