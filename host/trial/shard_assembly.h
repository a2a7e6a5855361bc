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

// The whole tensor. Each shard must lie within the global shape and share the others' dtype and
// global shape; shards with the same offsets and shape are replicas and count once; together the
// shards must cover every element exactly once. CorruptData naming `name` otherwise (a worker's
// shard missing at the step included); NotSupported for strings.
[[nodiscard]] Result<TensorValue> assemble_shards(std::string_view name, const std::vector<Shard>& shards);

}  // namespace vigil
