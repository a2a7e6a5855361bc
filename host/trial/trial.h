// The trial: everything smdebug's Trial and Tensor offer (format spec §5), over a trial folder or
// an S3 prefix (storage::ObjectStore). Every failure is a vigil::Error whose code names the smdebug exception.
//
// Refresh: like smdebug, queries that smdebug refreshes on first look for new index files until the
// end-of-training marker has been seen; after that the trial is final and nothing is listed again.
// Thread safety: every public method may be called from many threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "format/shard_layout.h"
#include "common/mode.h"
#include "format/collections_json.h"
#include "storage/object_store.h"
#include "trial/reductions.h"
#include "trial/tensor_value.h"

namespace vigil {

enum class StepState : int32_t { Unavailable = 0, Available = 1, NotYetAvailable = 2 };

struct TrialOptions {
  // smdebug's range_steps: index files whose global step is outside [begin, end) are never loaded.
  std::optional<int64_t> range_begin;
  std::optional<int64_t> range_end;
  // SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW: steps this far behind are declared complete (§5.3 b).
  int64_t incomplete_step_wait_window = 1000;
  // SMDEBUG_TRAINING_END_DELAY_REFRESH: pause before the final refresh once the marker is seen.
  // smdebug waits 1 s (for object stores); local writers publish the marker last, so 0 is safe.
  std::chrono::milliseconds end_refresh_delay{0};
  // How often waiting calls look again (opening without collection files, wait_for_steps).
  std::chrono::milliseconds poll_interval{100};
  // Following a trial in an object store: the pause between listings doubles from poll_interval up
  // to this while nothing new appears.
  std::chrono::milliseconds max_listing_interval{5000};
  // How long open() waits for the collection files; nullopt = until they appear or training ends.
  std::optional<std::chrono::milliseconds> collections_timeout;
};

// Reads the environment variables smdebug honours (SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW,
// SMDEBUG_TRAINING_END_DELAY_REFRESH in seconds) on top of `base`.
TrialOptions trial_options_from_env(TrialOptions base = {});

struct TensorNameQuery {
  std::optional<int64_t> step;  // global step for GLOBAL, else a mode step of `mode`
  Mode mode = Mode::Global;
  std::vector<std::string> regex;        // keep names matching any (re.search semantics)
  std::optional<std::string> collection; // keep names in / matching the collection
};

struct SavedReduction {
  ReductionOp op;
  bool abs;
  TensorValue value;
};

class Tensor;

class Trial : public std::enable_shared_from_this<Trial> {
 public:
  // Opens a trial (a local folder or "s3://bucket/prefix"): waits for the collection files (§5.2),
  // then loads the index.
  [[nodiscard]] static Result<std::shared_ptr<Trial>> open(const std::string& location, TrialOptions options = {});
  [[nodiscard]] static Result<std::shared_ptr<Trial>> open(std::shared_ptr<const storage::ObjectStore> store,
                                                           TrialOptions options = {});
  ~Trial();

  const std::filesystem::path& path() const;
  // Whether the trial is a local folder (reads cost microseconds) rather than an object store.
  bool is_local() const;
  // Where the trial's files are read from (request counts of an S3 store: storage::s3_stats).
  const storage::ObjectStore& store() const;
  const std::string& name() const;

  // ---- trial-level queries (smdebug Trial) ----
  [[nodiscard]] Result<std::vector<std::string>> tensor_names(const TensorNameQuery& query = {});
  bool has_tensor(std::string_view name);
  [[nodiscard]] Result<Tensor> tensor(std::string_view name);
  [[nodiscard]] Result<std::vector<int64_t>> steps(Mode mode = Mode::Global, bool show_incomplete_steps = false);
  // The first step after `after` that steps() would list, without building the list.
  [[nodiscard]] Result<std::optional<int64_t>> next_step(int64_t after, Mode mode = Mode::Global, bool show_incomplete_steps = false);
  std::vector<Mode> modes();
  // (mode, mode step) of a global step; nullopt when the step is unknown (after one refresh).
  std::optional<std::pair<Mode, int64_t>> mode_modestep(int64_t global_step);
  // Global step of a mode step; GLOBAL returns the step itself; nullopt when unknown.
  std::optional<int64_t> global_step(Mode mode, int64_t mode_step);
  [[nodiscard]] Result<std::vector<std::string>> workers();
  const std::vector<format::CollectionConfig>& collections() const;
  const format::CollectionConfig* collection(std::string_view name) const;
  [[nodiscard]] Result<StepState> has_passed_step(int64_t step, Mode mode = Mode::Global);
  // Blocks until every step is available (smdebug wait_for_steps). StepUnavailable / NoMoreData as
  // smdebug; Cancelled when `stop` is requested; Timeout when `timeout` passes.
  [[nodiscard]] Result<void> wait_for_steps(const std::vector<int64_t>& steps, Mode mode = Mode::Global,
                              std::stop_token stop = {},
                              std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Looks for new index files and the end marker now (what every refreshing query does first).
  [[nodiscard]] Result<void> refresh();
  // smdebug's no_refresh: while at least one hold is active, queries see a frozen index (a rule's
  // answers within one invocation agree). Holds nest and may come from several threads.
  void hold_refresh();
  void release_refresh();
  // Treat the trial as complete even without the end marker (`vigil evaluate --no-follow`).
  void assume_training_ended();

  int64_t last_complete_step();
  bool loaded_all_steps();
  bool training_ended();  // the end marker has been seen
  int64_t num_workers() const;

  // ---- per-tensor queries (smdebug Tensor); also reachable through Tensor ----
  [[nodiscard]] Result<std::vector<int64_t>> tensor_steps(std::string_view name, Mode mode = Mode::Global,
                                            bool show_incomplete_steps = false);
  [[nodiscard]] Result<TensorValue> value(std::string_view name, int64_t step, Mode mode = Mode::Global,
                            std::optional<std::string_view> worker = std::nullopt);
  // The saved reduction if there is one, else computed from the raw value.
  [[nodiscard]] Result<ReductionValue> reduction_value(std::string_view name, int64_t step, std::string_view reduction,
                                         bool abs = false, Mode mode = Mode::Global,
                                         std::optional<std::string_view> worker = std::nullopt);
  // The saved reductions only.
  [[nodiscard]] Result<std::vector<SavedReduction>> reduction_values(std::string_view name, int64_t step, Mode mode = Mode::Global,
                                                       std::optional<std::string_view> worker = std::nullopt);
  [[nodiscard]] Result<std::vector<int64_t>> shape(std::string_view name, int64_t step, Mode mode = Mode::Global,
                                     std::optional<std::string_view> worker = std::nullopt);
  // When the step was saved: the largest Event.wall_time among its records (all workers). Steps
  // that saved only shapes have no records: NotSupported.
  [[nodiscard]] Result<double> step_wall_time(int64_t step, Mode mode = Mode::Global);
  // A sharded tensor's placement in each worker that described it (format/shard_layout.h); nullopt
  // for a tensor no worker saved as a shard. value() and reduction_value() without a worker answer
  // for the whole of a sharded tensor.
  [[nodiscard]] Result<std::optional<std::map<std::string, format::ShardPlacement, std::less<>>>> sharded(std::string_view name);
  // Workers holding the tensor at the step, in the order they were indexed. No refresh.
  [[nodiscard]] Result<std::vector<std::string>> tensor_workers(std::string_view name, int64_t step, Mode mode = Mode::Global);

 private:
  struct State;
  explicit Trial(std::unique_ptr<State> state);
  // A sharded tensor's reduction: each worker's shard's statistics (from its value, else from the
  // reductions it saved), merged; no values are put together.
  [[nodiscard]] Result<ReductionValue> sharded_reduction(
      std::string_view name, int64_t step, Mode mode,
      const std::map<std::string, format::ShardPlacement, std::less<>>& placements, ReductionOp op, bool abs);
  std::unique_ptr<State> state_;
};

// A handle on one tensor of a trial (smdebug's Tensor); cheap to copy.
class Tensor {
 public:
  Tensor(std::shared_ptr<Trial> trial, std::string name) : trial_(std::move(trial)), name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  [[nodiscard]] Result<std::vector<int64_t>> steps(Mode mode = Mode::Global, bool show_incomplete_steps = false) const {
    return trial_->tensor_steps(name_, mode, show_incomplete_steps);
  }
  [[nodiscard]] Result<TensorValue> value(int64_t step, Mode mode = Mode::Global,
                            std::optional<std::string_view> worker = std::nullopt) const {
    return trial_->value(name_, step, mode, worker);
  }
  [[nodiscard]] Result<ReductionValue> reduction_value(int64_t step, std::string_view reduction, bool abs = false,
                                         Mode mode = Mode::Global,
                                         std::optional<std::string_view> worker = std::nullopt) const {
    return trial_->reduction_value(name_, step, reduction, abs, mode, worker);
  }
  [[nodiscard]] Result<std::vector<SavedReduction>> reduction_values(int64_t step, Mode mode = Mode::Global,
                                                       std::optional<std::string_view> worker = std::nullopt) const {
    return trial_->reduction_values(name_, step, mode, worker);
  }
  [[nodiscard]] Result<std::vector<int64_t>> shape(int64_t step, Mode mode = Mode::Global,
                                     std::optional<std::string_view> worker = std::nullopt) const {
    return trial_->shape(name_, step, mode, worker);
  }
  [[nodiscard]] Result<std::vector<std::string>> workers(int64_t step, Mode mode = Mode::Global) const {
    return trial_->tensor_workers(name_, step, mode);
  }

 private:
  std::shared_ptr<Trial> trial_;
  std::string name_;
};

}  // namespace vigil
