// The collections JSON written once per worker (format spec §1.4).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/mode.h"

namespace vigil::format {

struct SaveConfigMode {
  int64_t save_interval = 500;
  std::vector<int64_t> save_steps;
  int64_t start_step = 0;
  std::optional<int64_t> end_step;  // exclusive
  // smdebug's should_save_step (§6.1): save_steps is a union with the interval.
  bool should_save_step(int64_t mode_step) const;
};

struct ReductionSpec {
  std::string op;  // min max mean std variance sum prod l1 l2
  bool abs = false;
  bool operator==(const ReductionSpec&) const = default;
};

struct ReductionConfig {
  bool save_raw_tensor = true;
  std::vector<ReductionSpec> reductions;
  bool save_shape = false;
};

// Parses smdebug's comma-separated reduction list ("min,l2_norm,abs_mean,abs_l1_norm").
[[nodiscard]] Result<std::vector<ReductionSpec>> parse_reduction_list(std::string_view text);
// Writes it in smdebug's token order: plain reductions, norms, abs reductions, abs norms.
std::string format_reduction_list(const std::vector<ReductionSpec>& reductions);

struct CollectionConfig {
  std::string name;
  std::vector<std::string> include_regex;
  std::vector<std::string> tensor_names;
  std::optional<ReductionConfig> reduction_config;  // null in the file -> nullopt
  // Indexed by Mode (TRAIN, EVAL, PREDICT, GLOBAL); the whole thing null -> nullopt.
  std::optional<std::array<std::optional<SaveConfigMode>, 4>> save_config;
  bool save_histogram = true;
};

struct CollectionsFile {
  std::vector<CollectionConfig> collections;  // in file order
  int64_t num_workers = 1;
};

// `file` names the collection file in error messages.
[[nodiscard]] Result<CollectionsFile> parse_collections_json(std::string_view text, std::string_view file);
std::string serialize_collections_json(const CollectionsFile& file);

}  // namespace vigil::format
