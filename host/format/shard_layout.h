// Where a worker's shard of a sharded tensor (FSDP2's parameters, tensor parallelism's DTensors)
// sits in the whole tensor: the hooks write one file per worker, shards/<worker>.json, beside index/
// and events/, where smdebug's readers do not look (they read each worker's shard as an ordinary
// tensor). Vigil's trial puts the shards together (trial/shard_assembly.h). The file:
//   {"version": 1, "worker": "worker_0",
//    "tensors": {"Sequential_0.weight": {"global_shape": [8, 4], "offsets": [0, 0], "shape": [4, 4]}, ...}}
// "shape" is the worker's shard's (optional: without it the saved value gives it; a worker that
// saves only reductions needs it for the merge). FSDP1 gives each worker a contiguous run of the
// row-major flattened parameter instead of a box: "flat_offset" (the run's first element) replaces
// "offsets", and "shape" (required then) is the run's length, [n]; the worker saves the run, 1-D.
// A replicated tensor has offsets of zero and its shard is the whole tensor. Written whole (renamed
// into place) each time a worker meets a sharded tensor it had not described.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace vigil::format {

inline constexpr std::string_view kShardLayoutFolder = "shards/";
inline constexpr size_t kMaxShardRank = 32;

struct ShardPlacement {
  std::vector<int64_t> global_shape;  // the whole tensor's
  std::vector<int64_t> offsets;       // where this shard's first element sits, per dimension
  std::vector<int64_t> shape;         // the shard's; empty where the layout did not say
  std::optional<int64_t> flat_offset;  // a run of the flattened tensor (FSDP1); offsets empty then
  bool operator==(const ShardPlacement&) const = default;
};

struct WorkerShardLayout {
  std::string worker;
  std::map<std::string, ShardPlacement, std::less<>> tensors;
};

// Parses and checks a shards/<worker>.json (untrusted: ranks up to kMaxShardRank, sizes and offsets
// non-negative, a shard within the global shape). CorruptData naming `file` otherwise.
[[nodiscard]] Result<WorkerShardLayout> parse_shard_layout(std::string_view json_text, const std::string& file);
std::string shard_layout_json(const WorkerShardLayout& layout);

}  // namespace vigil::format
