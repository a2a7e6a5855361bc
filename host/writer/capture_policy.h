// The capture core: smdebug's hook policy, once, for every hook (the Python hooks through
// _vigil.CapturePolicy, the libtorch hook, TrialWriter::save_tensor). Given the collections as the
// hook configured them, it numbers the steps per mode, says which collections are due at a step,
// which of them hold a tensor (by name or by regex, recording the name), and what to write of it:
// the shape, the union of the reductions, the raw value, the TensorBoard histogram and scalar
// (format spec §4, §6.1, §6.2). It writes nothing itself: a hook hands the plan to a writer.
// Not thread-safe: a hook calls it under its own lock or from one thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <regex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "common/mode.h"
#include "format/collections_json.h"

namespace vigil::writer {

// smdebug PyTorch's built-in collections (§6.2, §10.4): TrialWriter's when the caller configures
// none, the libtorch hook's, and the Python PyTorch hook's regexes (_vigil.pytorch_builtin_collections).
struct BuiltinCollection {
  std::string_view name;
  std::string_view regex;  // empty: no include_regex
  bool save_histogram;
};
inline constexpr BuiltinCollection kPyTorchCollections[] = {
    {"default", "", true},
    {"weights", "^(?!gradient).*weight", true},
    {"biases", "^(?!gradient).*bias", true},
    {"gradients", "^gradient", true},
    {"losses", "[Ll]oss_(?!input).*output", false},
    {"all", "", true},
};
// The built-in collections as configurations (no reduction or save configuration of their own).
std::vector<format::CollectionConfig> pytorch_builtin_collections();

// The reductions smdebug knows (norms: l1, l2).
inline constexpr std::string_view kReductionOps[] = {"min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2"};

// Scalar collections always save the raw value and are never reduced or histogrammed (§3.9, §6.2);
// summary collections are not reduced or histogrammed either.
inline constexpr std::string_view kScalarCollections[] = {"losses", "metrics", "feature_importance", "average_shap",
                                                          "sm_metrics"};
inline constexpr std::string_view kSummaryCollections[] = {"tensorflow_summaries"};

// The hook-level configuration a collection without its own takes (smdebug's _prepare_collections).
struct CaptureDefaults {
  std::array<format::SaveConfigMode, 4> save_config{};  // indexed by Mode - 1
  format::ReductionConfig reduction_config{};           // smdebug's hooks: the raw tensor only
};

// What to write of one tensor at the current step.
struct CapturePlan {
  std::vector<std::string> collections;  // the due collections holding it, by name (sorted)
  bool save_raw = false;
  bool save_shape = false;
  std::vector<format::ReductionSpec> reductions;  // in smdebug's order, each once
  // TensorBoard: the histogram is "<histogram_collection>/<name>"; scalar collections add a scalar.
  std::optional<std::string> histogram_collection;
  bool scalar_summary = false;
  bool empty() const { return collections.empty(); }
};

class CapturePolicy {
 public:
  CapturePolicy() = default;  // no collections: plans nothing until add_collection()
  // `collections` as configured: a missing reduction_config or save_config (or one mode of it) takes
  // `defaults`; scalar collections save the raw value only; scalar and summary collections keep no
  // histogram. `include`: the collections the hook saves by itself ("all": every one). Step
  // numbering starts at `init_step` (the first begin_step() gives init_step + 1). InvalidArgument
  // for a regex the host cannot compile, an unknown reduction or a save_interval below 1.
  [[nodiscard]] static Result<CapturePolicy> create(std::vector<format::CollectionConfig> collections,
                                                    std::vector<std::string> include, CaptureDefaults defaults,
                                                    int64_t init_step = -1);
  // Adds a collection, or replaces the configuration of one (the names recorded in it stay).
  [[nodiscard]] Result<void> add_collection(format::CollectionConfig collection);
  bool includes(std::string_view collection) const;
  bool has_collections() const { return !collections_.empty(); }

  // smdebug's step numbering (§4): begin_step() advances the global step and the current mode's
  // step (GLOBAL's mode step is the global step); set_step() numbers a step explicitly (a framework
  // that counts its own rounds, a resumed trial).
  void set_mode(Mode mode);
  void begin_step();
  void set_step(int64_t global_step, int64_t mode_step);
  void set_mode_step(Mode mode, int64_t mode_step);  // a resumed trial's counter for another mode
  int64_t global_step() const { return global_step_; }
  Mode mode() const { return mode_; }
  int64_t mode_step() const { return mode_step(mode_); }
  int64_t mode_step(Mode mode) const { return mode_steps_[static_cast<size_t>(mode) - 1]; }

  // The included collections due at the current step (EVAL and PREDICT never save gradients or
  // optimizer variables), by name; empty: the step saves nothing of the hook's own.
  const std::vector<std::string>& due_collections();

  // A tensor of the hook's own: the included collections holding `name` (listed by name, or matched
  // by a regex, which lists it), plus `explicit_collections` (made with the defaults when unknown),
  // plus `fallback` when none holds it and it is not empty. With `check_due`, only those due now.
  CapturePlan plan(std::string_view name, std::span<const std::string> explicit_collections = {},
                   bool check_due = true, std::string_view fallback = {});
  // smdebug's save_tensor(name, value, collections): `name` joins each collection (made with the
  // defaults when unknown); true when one of them saves the raw value or was made here.
  bool join(std::string_view name, std::span<const std::string> collections);

  // The collections with the names recorded so far, as a collections file (§1.4) writes them.
  format::CollectionsFile collections_file(int64_t num_workers) const;

 private:
  struct Collection {
    format::CollectionConfig config;  // complete: reduction_config and every mode's save_config set
    std::vector<std::regex> regexes;
    std::set<std::string, std::less<>> names;  // tensor_names plus the names recorded
  };
  [[nodiscard]] Result<Collection> complete(format::CollectionConfig config) const;
  size_t find_or_create(std::string_view name);
  const std::vector<size_t>& holders(const std::string& name);
  bool due(const Collection& c) const;

  std::vector<Collection> collections_;
  std::vector<std::string> include_;
  CaptureDefaults defaults_;
  std::unordered_map<std::string, std::vector<size_t>> holders_;  // name -> included collections
  int64_t init_step_ = -1;
  int64_t global_step_ = -1;
  Mode mode_ = Mode::Global;
  std::array<int64_t, 4> mode_steps_{-1, -1, -1, -1};
  std::optional<std::vector<std::string>> due_;  // of the current step
};

}  // namespace vigil::writer
