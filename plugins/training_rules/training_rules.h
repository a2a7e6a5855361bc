// The "training" family of built-in rules (builtin-rules.md §2.5-2.7, 2.11-2.13, 2.20): loss
// progress, overfitting, activations, initialisation and stalls. Each class's kDescription is its
// documentation (Markdown), published through the descriptor.
#pragma once

#include <vigil/sdk.hpp>

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace vigil::training {

using sdk::Error;
using sdk::Result;

// ---------------------------------------------------------------------------------------------
class LossNotDecreasing final : public sdk::Rule {
 public:
  static constexpr const char* kModes[] = {"EVAL", "TRAIN", "GLOBAL", nullptr};
  static constexpr const char* kComparisons[] = {"documented", "ci2019", "window_mean", "trend", nullptr};
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_string_list("collection_names", nullptr, "Collections whose scalar tensors are losses."),
      sdk::param_string_list("tensor_regex", nullptr, "Regexes (re.search) selecting scalar loss tensors."),
      sdk::param_bool("use_losses_collection", "True", "Also use the `losses` collection when the trial has it."),
      sdk::param_int("num_steps", "10", "Minimum distance, in steps of the chosen mode, between two checks.").min(1),
      sdk::param_double("diff_percent", "0.1",
                        "Fire when the loss decreased by less than this percentage over num_steps.")
          .range(0, 100),
      sdk::param_double("increase_threshold_percent", "5",
                        "Fire when the loss increased by more than this percentage over num_steps.")
          .range(0, 100),
      sdk::param_enum("mode", kModes, nullptr, "Steps judged: EVAL, TRAIN or GLOBAL. Unset: EVAL, then TRAIN, then GLOBAL."),
      sdk::param_enum("comparison", kComparisons, "documented",
                      "Vigil extension: `documented` (SageMaker's 2020+ docs), `ci2019` (smdebug's 2019 tests), "
                      "`window_mean` (means of the last two windows of num_steps losses) or `trend` (a least-squares "
                      "trend over the last 2*num_steps losses, against their noise).")
          .calibrated("trend"),
      sdk::param_bool("prefer_train_mode", "False", "Vigil: with mode unset, try TRAIN before EVAL.")
          .calibrated("True"),
      sdk::param_int("patience", "1", "Vigil: consecutive checks at which a loss must fire before the rule does.")
          .min(1)
          .calibrated("3"),
      sdk::param_double("trend_std_errors", "1.2816",
                        "Vigil, `trend`: standard errors by which the decrease must beat diff_percent to count.")
          .min(0),
  };
  static constexpr const char* kDescription = R"md(Detects a loss that is not decreasing fast enough (or is increasing).

**Inputs.** Scalar loss tensors (exactly one element; other tensors are skipped): the union of the tensors of
`collection_names`, the names matching any regex of `tensor_regex` (`re.search`), and the `losses` collection when
`use_losses_collection` is True and the trial has it. When none of these is configured or available, every scalar
tensor of the trial is used. SageMaker attaches `losses` (save_interval 500).

**Mode.** `mode` chooses whose steps are judged and counted: `TRAIN` or `EVAL` use that mode's steps and mode-step
numbers (other steps give no verdict), `GLOBAL` uses every saved step with global numbers. Unset (the default),
the rule uses the first of EVAL, TRAIN, GLOBAL (TRAIN, EVAL, GLOBAL when `prefer_train_mode` is True, a Vigil
addition) in which a selected loss tensor has been saved; the choice is made again at each step until the first
check, then kept.

**Verdict.** Steps are counted in the chosen mode. At a step *s* where a loss is saved, if a check happened at
*c* and *s* < *c* + `num_steps`, there is no verdict. Otherwise, for each loss tensor and each worker that saved it
at *s*, *p* is the newest step of that tensor with *p* ≤ *s* − `num_steps`; with `prev` = loss(*p*) and
`cur` = loss(*s*) (same worker):

* if `cur` ≤ `prev`: fire when 100·(`prev` − `cur`)/`prev` < `diff_percent` (decreased too little);
* if `cur` > `prev`: fire when 100·(`cur` − `prev`)/`prev` > `increase_threshold_percent` (increased too much).

Comparisons with NaN are false (no trigger). If at least one such comparison was made, *s* is a check (the next
check comes at the first saved step ≥ *s* + `num_steps`); if no loss had such a *p*, nothing is checked and the
schedule does not move. The rule fires when any loss tensor fires. The docs' example: losses saved every 3
steps, `num_steps` 10: step 21 is compared with step 9 and the next check is at step 33.

**Other comparisons** (`comparison`, a Vigil extension; SageMaker jobs never set it and get `documented`):

* `ci2019`: the behaviour proven by smdebug's 2019 CI tests, on the same schedule: fire when
  `cur` ≥ `prev`·(1 + `diff_percent`/100); `increase_threshold_percent` is not used.
* `window_mean`: the windowed reading of the real smdebug fixtures' reference rule. At a step *s* where a loss is
  saved, let *n* be the number of saved steps of that tensor ≤ *s* (in the chosen mode). When *n* ≥ 2·`num_steps`
  and *n* is a multiple of `num_steps`, `cur` is the mean of the last `num_steps` values and `prev` the mean of the
  `num_steps` before them; fire when `cur` ≥ `prev`·(1 − `diff_percent`/100). There is no other schedule.
* `trend`: a trend test against the run's own noise. At every saved step *s* of the loss with at least
  2·`num_steps` saved values ≤ *s* (*k* = `num_steps`), a least-squares line is fitted to the last 2*k* values
  against their position (0 … 2*k* − 1). `prev` and `cur` are the line's values at the centres of the two halves
  (as `window_mean` compares the halves' means), so the decrease is `prev` − `cur` = −slope·*k*, and its standard
  error *se* = *k*·(standard error of the slope, from the residuals, 2*k* − 2 degrees of freedom). The loss is
  decreasing only when `prev` − `cur` > |`prev`|·`diff_percent`/100 + `trend_std_errors`·*se*: it fires otherwise
  (a rise always does). With no noise (*se* = 0) this is the documented test on the fitted values. A window
  holding NaN or an infinite value does not fire (ExplodingTensor reports those). There is no other schedule.

**Patience** (`patience`, a Vigil addition; 1 in SageMaker's profile): per loss tensor and worker, a counter of
consecutive checks at which the comparison fired (a check where it did not resets it; a step where the tensor
could not be compared leaves it); the rule fires when a counter reaches `patience`.

**UNSURE points of the spec, as implemented.** (1) The default comparison is the documented 2020+ meaning above,
not the 2019 CI behaviour, which the labelled pathology runs list only as an alternative reading (it stays
reachable as `comparison=ci2019`, as the spec asks); both the decrease and the increase tests are strict. (2) The schedule starts at the first
saved step that has a step ≥ `num_steps` earlier. (3) Non-scalar tensors are skipped, not errors. (4) Several loss
tensors or workers: any one fires. (5) Unset `mode` is resolved as above, so a run with EVAL losses is judged on
them (which is what the labels assume).

**Not judged.** Steps of another mode, steps between two checks, steps where no loss could be compared (no
step `num_steps` earlier, fewer than 2·`num_steps` values for `trend`) and trials without a scalar loss give no
verdict and say so (`not_judged`).

**Calibrated profile.** `comparison` `trend`, `prefer_train_mode` True and `patience` 3 (with `num_steps` 10,
`diff_percent` 0.1 and `trend_std_errors` 1.2816, the one-sided 90 % normal quantile). The documented test compares two
single losses, so it measures the noise of two minibatches (or two evaluations) more than the trend, and it
tolerates any rise below `increase_threshold_percent` (5 %): a loss stuck at chance level that drifts up by 1-2 %
is not reported. The trend test fits 20 losses and calls the loss decreasing only when the fitted decrease beats
`diff_percent` by more than its own noise (1.28 standard errors); three consecutive checks must agree before the
rule fires. The training loss is the one the optimiser lowers, hence TRAIN first: a rising validation loss while
the training loss falls is overfitting (Overfit, Overtraining), not a stalled optimisation.

**Evidence.** The mode, global step, mode step, `num_steps`, both thresholds and `patience`, and per firing loss:
tensor, worker, the counter, the compared step, `prev`, `cur`, the change in percent and which threshold was
crossed (`window_mean`: the window's first and last steps and both means instead; `trend`: the window's first and
last steps, the fitted `prev` and `cur`, the decrease and its standard error in percent of `prev`, and
`trend_std_errors`).)md";

  explicit LossNotDecreasing(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  Result<std::vector<std::string>> loss_tensors() const;
  Result<vigil_mode> resolve_mode(const std::vector<std::string>& names) const;
  // One comparison of one loss tensor for one worker at mode step s.
  struct Comparison {
    bool fires = false;
    sdk::JsonObject evidence;  // what was compared (used when it fires)
  };
  // The comparison the `comparison` parameter names; nullopt when nothing could be compared (no
  // earlier step, too few values, no value).
  Result<std::optional<Comparison>> compare(const sdk::Tensor& tensor, const std::string& worker, vigil_step s,
                                            vigil_mode mode, std::span<const vigil_step> steps) const;
  Result<std::optional<Comparison>> compare_single(const sdk::Tensor& tensor, const std::string& worker, vigil_step s,
                                                   vigil_mode mode, std::span<const vigil_step> steps) const;
  Result<std::optional<Comparison>> compare_windows(const sdk::Tensor& tensor, const std::string& worker, vigil_step s,
                                                    vigil_mode mode, std::span<const vigil_step> steps) const;
  Result<std::optional<Comparison>> compare_trend(const sdk::Tensor& tensor, const std::string& worker, vigil_step s,
                                                  vigil_mode mode, std::span<const vigil_step> steps) const;
  // The last `count` saved values of the tensor at steps <= s; nullopt when fewer were saved.
  Result<std::optional<std::pair<std::vector<vigil_step>, std::vector<double>>>> last_values(
      const sdk::Tensor& tensor, const std::string& worker, vigil_step s, vigil_mode mode,
      std::span<const vigil_step> steps, size_t count) const;

  std::vector<std::string> collections_;
  std::vector<std::string> regexes_;
  bool use_losses_;
  int64_t num_steps_;
  double diff_percent_;
  double increase_percent_;
  std::string comparison_;
  bool prefer_train_;
  int64_t patience_;
  double trend_std_errors_;
  std::optional<vigil_mode> mode_;             // given, or fixed at the first check
  std::optional<vigil_step> last_check_;        // in steps of mode_
  std::map<std::pair<std::string, std::string>, int64_t> counters_;  // (tensor, worker): consecutive fires
};

// ---------------------------------------------------------------------------------------------
class Overfit final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_string_list("tensor_regex", nullptr, "Regexes selecting the loss tensors (default: the losses collection)."),
      sdk::param_int("patience", "1", "Consecutive EVAL checks above ratio_threshold needed to fire.")
          .min(1)
          .calibrated("3"),
      sdk::param_double("ratio_threshold", "0.1", "Fire when (validation - training)/training exceeds this."),
      sdk::param_bool("require_validation_rise", "False",
                      "Vigil: a check counts only when the validation loss is above its lowest value so far.")
          .calibrated("True"),
  };
  static constexpr const char* kDescription = R"md(Detects overfitting: the validation loss drifting above the training loss.

**Inputs.** Scalar loss tensors saved in TRAIN and in EVAL mode: the names matching `tensor_regex` (comma-separated,
`re.search`), or the `losses` collection when no regex is given. GLOBAL-mode steps count as training steps; PREDICT
steps are ignored. The docs' example saves `losses` every 100 TRAIN and every 10 EVAL steps.

**Verdict.** Per loss tensor and worker, in global-step order: each TRAIN value is added to the current training
window. Each EVAL step is a check: `mean_train` = the mean of the training window (the TRAIN values saved since the
previous check; when there are none, the previous check's `mean_train` is used again; when there never were any,
there is no check), the window is emptied, `val` = the EVAL value at this step, and
*r* = (`val` − `mean_train`)/`mean_train`. If *r* > `ratio_threshold` a counter is incremented, otherwise (NaN
included) it is reset to 0. The rule fires at the check when the counter ≥ `patience`; any tensor or worker firing
fires the rule. TRAIN steps give no verdict.

**start_step.** SageMaker's Overfit has a `start_step` parameter (default 0): in Vigil it is the host's reserved
`start_step` key, which has the same effect (no step before it is evaluated, so neither its checks nor its training
values count).

**Validation rise** (`require_validation_rise`, a Vigil addition; False in SageMaker's profile): when True, a
check counts (increments the counter) only when, besides *r* > `ratio_threshold`, `val` is above the lowest EVAL
value of that tensor and worker before it; otherwise the counter is reset as above.

**UNSURE points of the spec, as implemented.** The window of the means is the recent one (TRAIN losses since the
previous EVAL check, against the EVAL loss of the check), not cumulative means over the whole run (the labels list
that only as an alternative reading); the counter is per tensor and worker.

**Not judged.** TRAIN and PREDICT steps, steps without a selected loss, and EVAL steps before any training loss
give no verdict and say so (`not_judged`).

**Calibrated profile.** `require_validation_rise` True and `patience` 3. A validation loss above the training loss
is the normal generalisation gap, and the gap ratio of a small training loss swings with each minibatch: on the
labelled runs the ratio alone fires on five runs that generalise well and whose validation loss keeps falling.
Overfitting proper is the validation loss rising while the training loss still falls, so a check counts only when
the validation loss is above its best so far; three consecutive such checks (hysteresis) keep one noisy
evaluation from firing the rule. Evidence then also gives the best validation loss.

**Evidence.** Per firing tensor and worker: `val`, `mean_train`, how many TRAIN values it covers, *r*, the
threshold, the counter and `patience` (with `require_validation_rise`: `best_val`, the lowest earlier EVAL value).)md";

  explicit Overfit(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  struct State {
    double train_sum = 0;
    int64_t train_count = 0;
    std::optional<double> last_train_mean;
    int64_t last_train_count = 0;
    int64_t counter = 0;
    double best_val = std::numeric_limits<double>::infinity();  // the lowest EVAL value so far
  };
  std::vector<std::string> regexes_;
  int64_t patience_;
  double ratio_threshold_;
  bool require_validation_rise_;
  std::map<std::pair<std::string, std::string>, State> state_;  // (tensor, worker)
};

// ---------------------------------------------------------------------------------------------
class Overtraining final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_int("patience_train", "5", "TRAIN steps without improvement before firing.").min(1).calibrated("10"),
      sdk::param_int("patience_validation", "10", "EVAL steps without improvement before firing.")
          .min(1)
          .calibrated("5"),
      sdk::param_double("delta", "0.01", "Minimum decrease of the best loss that counts as an improvement.").min(0),
      sdk::param_bool("relative_delta", "False", "Vigil: delta is a fraction of the best loss, not an amount.")
          .calibrated("True"),
      sdk::param_int("train_window", "1", "Vigil: TRAIN values are compared as the mean of the last this many.")
          .min(1)
          .calibrated("10"),
  };
  static constexpr const char* kDescription = R"md(Detects overtraining: the training or the validation loss has stopped improving.

**Inputs.** The scalar tensors of the `losses` collection, saved in TRAIN mode (GLOBAL-mode steps count as TRAIN)
and in EVAL mode. PREDICT steps are ignored.

**Verdict.** Per loss tensor and worker, and per mode, the rule keeps the best loss so far (initially +inf) and a
counter. At each saved value *v*: if *v* < best − `delta`, best = *v* and the counter returns to 0; otherwise
(NaN included) the counter is incremented. So the first finite value sets the best. After updating, at every step
where a loss was saved (TRAIN or EVAL), the rule fires when any tracked training counter ≥ `patience_train` or any
validation counter ≥ `patience_validation`. It keeps firing at each step until an improvement resets the counter.
Steps without a saved loss give no verdict.

**Vigil additions** (SageMaker's profile leaves them off):

* `relative_delta` True: an improvement is *v* < best − `delta`·|best|, so `delta` is a fraction of the loss
  (0.01: one percent) instead of an amount in the loss's units.
* `train_window` *w* > 1: the training counter compares, instead of each TRAIN value, the mean of the last *w*
  TRAIN values of that tensor and worker (a moving mean over the minibatch noise); it starts once *w* values are
  saved. Validation values are compared one by one.

**UNSURE points of the spec, as implemented.** Either counter fires ("train or validation"), not the validation
counter alone; counters count saved steps of their mode; NaN never improves.

**Not judged.** PREDICT steps, steps without a saved loss, and steps before any counter has started (fewer than
`train_window` TRAIN values and no EVAL value yet) give no verdict and say so (`not_judged`).

**Calibrated profile.** `relative_delta` True (with `delta` 0.01: a 1 % improvement), `train_window` 10,
`patience_train` 10, `patience_validation` 5. An absolute `delta` means nothing across losses of different scales
(0.01 is 20 % of a loss of 0.05 and noise on a loss of 5). A single minibatch loss is noisy, so its best value so
far is an outlier that later values rarely beat: SageMaker's training counter fires on most noisy runs that are
still learning (four of the labelled runs). The calibrated training counter tracks the moving mean of 10 values and
fires after 10 steps without a 1 % improvement, i.e. once a whole window of new values has failed to improve. The
validation loss (evaluated on a fixed set) is smooth; 5 evaluations without a 1 % improvement is a usual
early-stopping patience, where SageMaker's 10 needs more evaluations than many jobs make.

**Evidence.** Per counter at or above its patience: tensor, worker, mode, counter, patience, best loss, the value
just compared (when compared at this step: with `train_window` > 1 the TRAIN moving mean), `delta`, and with
`train_window` > 1 the window.)md";

  explicit Overtraining(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  struct Track {
    double best = 0;
    int64_t counter = 0;
    bool started = false;
  };
  struct State {
    Track train, validation;
    std::deque<double> train_recent;  // the last train_window TRAIN values
  };
  // Updates `t` with the value `v`; true when v improves the best loss.
  bool update(Track& t, double v) const;

  int64_t patience_train_;
  int64_t patience_validation_;
  double delta_;
  bool relative_delta_;
  size_t train_window_;
  std::map<std::pair<std::string, std::string>, State> state_;  // (tensor, worker)
};

// ---------------------------------------------------------------------------------------------
class DeadRelu final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_string_list("tensor_regex", ".*relu_output", "Regexes selecting the ReLU output tensors."),
      sdk::param_double("threshold_inactivity", "1.0", "A unit active in less than this % of the batch is dead.")
          .range(0, 100),
      sdk::param_double("threshold_layer", "50.0", "Fire when more than this % of a layer's units are dead.")
          .range(0, 100),
  };
  static constexpr const char* kDescription = R"md(Detects layers where most ReLU units are dead (never activate).

**Inputs.** The tensors matching `tensor_regex` (comma-separated, `re.search`; SageMaker attaches `relu_output`
with include regex `.*relu_output`, save_interval 500; the docs' example uses `.*relu_output|.*ReLU_output`), at
every step and mode where they are saved, each worker separately.

**Verdict.** For an output tensor of shape (batch, ...) (axis 0 is the batch; a tensor of rank 0 or 1 is one
sample), each position in the other axes is a unit. A unit's activity is 100·(number of samples with output > 0)/batch;
the unit is dead when its activity < `threshold_inactivity`. NaN is not > 0, so NaN outputs count as inactive.
dead% = 100·dead units/units. The rule fires at the step when dead% > `threshold_layer` for any tensor and worker.
Empty tensors are skipped; a step where no selected tensor was saved gives no verdict.

**UNSURE points of the spec, as implemented.** Units are judged within each saved step (activity is not
accumulated across steps); strict comparisons as the docs word them ("less than", "greater than").

**Evidence.** Per firing layer: tensor, worker, dead%, dead and total units, batch size and both thresholds.)md";

  explicit DeadRelu(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  std::vector<std::string> regexes_;
  double threshold_inactivity_;
  double threshold_layer_;
};

// ---------------------------------------------------------------------------------------------
class SaturatedActivation final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_string_list("collection_names", nullptr, "Collections holding tanh/sigmoid input tensors."),
      sdk::param_string_list("tensor_regex", ".*tanh_input|.*sigmoid_input", "Regexes selecting tanh/sigmoid inputs."),
      sdk::param_double("threshold_tanh_min", "-9.4999", "Lower end of tanh's non-saturated input range."),
      sdk::param_double("threshold_tanh_max", "9.4999", "Upper end of tanh's non-saturated input range."),
      sdk::param_double("threshold_sigmoid_min", "-23", "Lower end of sigmoid's non-saturated input range."),
      sdk::param_double("threshold_sigmoid_max", "16.99999", "Upper end of sigmoid's non-saturated input range."),
      sdk::param_double("threshold_inactivity", "1.0",
                        "A unit inside the range for less than this % of the batch is saturated.")
          .range(0, 100),
      sdk::param_double("threshold_layer", "50.0", "Fire when more than this % of a layer's units are saturated.")
          .range(0, 100),
  };
  static constexpr const char* kDescription = R"md(Detects tanh and sigmoid layers whose inputs sit in the flat tails of the function.

**Inputs.** The union of the tensors of `collection_names` and the names matching `tensor_regex` (comma-separated,
`re.search`; default `.*tanh_input|.*sigmoid_input`), at every step and mode where they are saved, each worker
separately. The function comes from the tensor name: a name containing "tanh" (any case) uses
(`threshold_tanh_min`, `threshold_tanh_max`), otherwise one containing "sigmoid" uses (`threshold_sigmoid_min`,
`threshold_sigmoid_max`); other tensors are skipped. The default ranges are where the derivative stays above about
1e-7.

**Verdict.** For an input tensor of shape (batch, ...) (axis 0 is the batch; rank 0 or 1 is one sample), each
position in the other axes is a unit. A unit's activity is 100·(number of samples whose input lies strictly
inside (min, max))/batch; the unit is saturated when its activity < `threshold_inactivity`. NaN is never inside,
so NaN inputs count as saturated. saturated% = 100·saturated units/units. The rule fires at the step when
saturated% > `threshold_layer` for any tensor and worker. Empty tensors are skipped; a step where no selected
tensor was saved gives no verdict.

**UNSURE points of the spec, as implemented.** The same structure as DeadRelu: activity per saved step, not
accumulated; strict comparisons.

**Evidence.** Per firing layer: tensor, worker, function, range, saturated%, saturated and total units, batch size
and both thresholds.)md";

  explicit SaturatedActivation(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  std::vector<std::string> collections_;
  std::vector<std::string> regexes_;
  double tanh_min_, tanh_max_, sigmoid_min_, sigmoid_max_;
  double threshold_inactivity_;
  double threshold_layer_;
};

// ---------------------------------------------------------------------------------------------
class PoorWeightInitialization final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_string_list("activation_inputs_regex", ".*relu_input", "Regexes selecting the activation inputs."),
      sdk::param_double("threshold", "10.0", "Fire when max/min variance of the activation inputs exceeds this.").min(0),
      sdk::param_double("distribution_range", "0.001", "Fire when a gradient's p95 - p5 is below this.").min(0),
      sdk::param_int("patience", "5", "TRAIN steps without a new lowest loss that count as a stalled loss.").min(1),
      sdk::param_double("steps", "10", "Only global steps below this are judged.").min(0),
  };
  static constexpr const char* kDescription = R"md(Detects a poor weight initialisation during the first steps of training.

**Inputs.** The activation inputs matching `activation_inputs_regex` (comma-separated, `re.search`; SageMaker
attaches `relu_input` with include regex `.*relu_input`, save_interval 500), the `gradients` collection, and the
scalar tensors of the `losses` collection saved in TRAIN mode (GLOBAL-mode steps count as TRAIN).

**Verdict.** Only global steps < `steps` are judged (later steps return False). At such a step the rule fires
when any of three checks does, for any worker:

1. *Activation variance:* the population variance (`np.var`) of each activation input saved at the step by the
   worker; with at least two of them, ratio = max/min. It fires when ratio > `threshold`. A zero minimum gives an
   infinite ratio (fires) unless the maximum is zero too; a NaN variance gives no verdict.
2. *Gradient spread:* for each gradient tensor saved at the step, p95 − p5 (numpy's linear `quantile`) of its
   values; it fires when the smallest spread < `distribution_range`. NaN gives no verdict.
3. *Loss stall:* per loss tensor and worker, the rule tracks the lowest loss so far (initially +inf) and the
   number of TRAIN values saved since it was last lowered (a value that is not strictly lower, NaN included,
   increments it). It fires when that number ≥ `patience` at a step where the loss is saved.

The loss is tracked at every step below `steps`, whether or not gradients are saved there.

**UNSURE points of the spec, as implemented.** `steps` counts global steps (the labels also list the first `steps`
TRAIN-mode steps as an alternative reading); "loss has not decreased within `patience` steps" is read as `patience`
saved TRAIN values without a new minimum; the gradient check uses the smallest spread over tensors; the variance
ratio is taken per worker, across the layers that worker saved.

**Evidence.** For each check that fired: the variance ratio with the tensors holding the extremes, the gradient
tensor with the smallest spread, or the stalled loss with its counter and lowest value; with the thresholds.)md";

  explicit PoorWeightInitialization(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  struct LossTrack {
    double best = 0;
    int64_t since_best = 0;
    bool started = false;
  };
  std::vector<std::string> regexes_;
  double threshold_;
  double distribution_range_;
  int64_t patience_;
  double steps_;
  std::map<std::pair<std::string, std::string>, LossTrack> losses_;  // (tensor, worker)
};

// ---------------------------------------------------------------------------------------------
class StalledTrainingRule final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("threshold", "1800", "Seconds without a newly saved step that count as a stall.").min(0),
      sdk::param_bool("stop_training_on_fire", "False", "SageMaker stops the training job when the rule fires."),
      sdk::param_string("training_job_name_prefix", nullptr, "Prefix of the training job to stop."),
      sdk::param_double("relative_threshold", "0",
                        "Vigil: also a stall, a gap above this many median intervals between saved steps (0: off).")
          .min(0)
          .calibrated("1000"),
      sdk::param_double("relative_threshold_floor", "1", "Vigil: seconds below which relative_threshold never fires.")
          .min(0),
  };
  static constexpr const char* kDescription = R"md(Detects a training job that stopped saving data for longer than `threshold` seconds.

**Inputs.** The wall-clock time of every saved global step: the largest `Event.wall_time` among the step's records
on all workers (host service `step_wall_time`, ABI 1.1), i.e. when the training job wrote the step. Any tensor
counts; SageMaker attaches no collection (the docs' example saves `losses` every 500 steps).

**Verdict.** At each saved step *s*, with *n* the next saved global step: the gap is
wall_time(*n*) − wall_time(*s*), and the rule fires at *s* when gap > `threshold`. So a stall is reported at the
last step written before it. While the training is still running and no later step exists yet, the gap is measured
up to the evaluator's clock (now − wall_time(*s*)) at the moment *s* is judged; after the end of training the last
step has no gap and gives False. A step that saved no tensor record (shapes only) gives no verdict.

**While no step arrives** (ABI 1.2 hosts): the host ticks the rule about once a second with its clock while it
waits for the next step of a live trial; the rule fires, as at the last step it was invoked at, when
now − wall_time(that step) is above the threshold, once per stall (the step judged or ticked before does not fire
again). Before the first step there is nothing to measure.

**Relative threshold** (`relative_threshold` *r*, a Vigil addition; 0, off, in SageMaker's profile): the
intervals between consecutive saved steps up to *s* (in global-step order, each saved step's wall time minus the
previous one's) give a median *m*; once at least 10 intervals are known, a gap also fires when it is above
max(`relative_threshold_floor`, *r*·*m*). The median is taken over the steps up to *s* only, so the verdict is the
same offline and live, and the start-up of a job does not set it (the 10 intervals are a minimum sample).

**Limits.** Vigil judges saved steps only: a job that saves nothing at all, or the time between the rule's start
and the first step, is never judged. `stop_training_on_fire` and `training_job_name_prefix` are accepted for
compatibility; stopping a SageMaker job is not done locally (the evidence says whether it was requested).

**UNSURE points of the spec, as implemented.** The clock is the saved steps' event wall times (what the labels
use), not the time at which the rule noticed new data; the comparison is strict (gap > `threshold`).

**Not judged.** Steps without a tensor record, the last step of a finished training and ticks before the first
step give no verdict and say so (`not_judged`).

**Calibrated profile.** `relative_threshold` 1000 (with the floor of 1 s): a job is also stalled when no step
has been saved for a thousand times its own median interval between saved steps. SageMaker's 1800 s suits jobs
whose steps take seconds; a job whose steps take milliseconds can hang for half an hour before it is noticed.
A checkpoint or an evaluation phase that saves nothing also makes a gap, typically tens to a few hundred step
intervals: the factor of 1000 is meant to stay above them, and jobs with longer unsaved phases should save their
EVAL steps or raise `relative_threshold`. The floor is the host's tick: a shorter stall cannot be seen live.
SageMaker's `threshold` still applies.

**Evidence.** The step, the next step (null and `now` while live), both wall times, the gap, the threshold, and
whether stop_training_on_fire was set; with `relative_threshold`, the median interval, how many intervals it
covers and the relative limit.)md";

  explicit StalledTrainingRule(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;
  Result<bool> invoke_at_time(double wall_time, vigil_step last_step) override;

 private:
  // The running median of the intervals between saved steps: two heaps around it.
  class Median {
   public:
    void add(double v);
    size_t size() const { return low_.size() + high_.size(); }
    double value() const;  // size() > 0

   private:
    std::priority_queue<double> low_;                                            // the smaller half
    std::priority_queue<double, std::vector<double>, std::greater<double>> high_;  // the larger half
  };

  Result<std::optional<double>> wall_time(vigil_step step);
  Result<std::optional<vigil_step>> next_step(vigil_step step);
  // Records the interval from the previous step seen to `step` (saved at `wall`).
  void record_interval(vigil_step step, double wall);
  // Whether `gap` seconds after `step` (saved at `wall`) is a stall; reports the evidence if so.
  Result<bool> judge_gap(vigil_step step, double wall, double gap, std::optional<std::pair<vigil_step, double>> next);

  double threshold_;
  bool stop_on_fire_;
  double relative_threshold_;
  double relative_floor_;
  std::vector<vigil_step> known_steps_;                       // cached trial.steps()
  std::optional<std::pair<vigil_step, std::optional<double>>> cached_wall_;  // the last step read
  std::optional<std::pair<vigil_step, double>> previous_;     // the last step seen with its wall time
  Median intervals_;
  std::optional<vigil_step> reported_;                        // the last step a stall was reported at
};

}  // namespace vigil::training
