// The "tensor" family of SageMaker Debugger built-in rules (spec builtin-rules.md §2.1-2.4,
// 2.8-2.10). Each class's kDescription is its user documentation (docs/rules.md is generated from
// the descriptors), so it states exactly what the code does.
#pragma once

#include <vigil/sdk.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "tensor_support.h"

namespace vigil::rules::tensor {

// ---------------------------------------------------------------------------------------------
class VanishingGradient final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("threshold", "0.0000001",
                        "The rule fires when the mean absolute value of a gradient is below this (strictly).")
          .min(0),
  };
  static constexpr char kDescription[] = R"md(Detects gradients that have become vanishingly small.

**Inputs.** Every tensor of the `gradients` collection that was saved at the step (SageMaker attaches
`gradients` with `save_interval` 500 to this rule), on every worker that saved it, in any mode (steps are
global steps).

**Verdict at a step.** For each gradient tensor *g* and worker, *m* = `reduction_value(step, "mean",
abs=True)`: a saved `abs_mean` reduction when the hook saved one, otherwise mean(|g|) over all elements
computed from the saved value with numpy's rules (a float32 tensor gives a float32 mean). The rule fires
when **m < threshold** (strict) for at least one tensor on one worker. NaN and ±Inf means never fire (NaN
comparisons are false), so an empty tensor never fires either. A tensor/worker with neither a value nor a
saved abs-mean at the step gives no verdict; a step where no gradient gives one is skipped (no verdict).
There is no state across steps and step 0 is judged like any other (the spec's UNSURE note about
"step 0 always returns False" is read as data, not as a rule).

**Evidence.** The smallest mean (`tensor`, `worker`, `mean_abs`), `threshold`, `tensors_below` (how
many tensor/worker pairs were below) and `below`: up to 10 of them with their means.)md";

  static Result<std::unique_ptr<VanishingGradient>> create(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  VanishingGradient(sdk::RuleContext ctx, double threshold) : Rule(std::move(ctx)), threshold_(threshold) {}
  double threshold_;
};

// ---------------------------------------------------------------------------------------------
class ExplodingTensor final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_string_list("collection_names", nullptr,
                             "Collections whose tensors are inspected (comma-separated). With tensor_regex, the union."),
      sdk::param_string_list("tensor_regex", nullptr,
                             "Regexes (comma-separated, matched anywhere in the name) of tensors to inspect. With "
                             "neither parameter, every tensor of the trial is inspected."),
      sdk::param_bool("only_nan", "False", "Fire on NaN only; by default NaN, +Inf and -Inf all fire."),
  };
  static constexpr char kDescription[] = R"md(Detects non-finite values (NaN, +Inf, -Inf) in tensors.

**Inputs.** The tensors of `collection_names` ∪ the tensors matching `tensor_regex` (Python `re.search`:
anywhere in the name); when **neither** is given, **every tensor of the trial**. SageMaker attaches no
collection to this rule. Every worker that saved a tensor at the step is inspected; steps are global
steps, any mode.

**Verdict at a step.** The rule fires when, for any selected tensor on any worker:

* its saved value holds a NaN, or (unless `only_nan`) a +Inf or -Inf element. Every floating dtype is
  checked (float16, bfloat16, float32, float64; complex numbers by both parts). Integer, boolean and
  string values cannot hold such an element and never fire; Vigil also reads the dtypes smdebug 1.0.34
  cannot decode (int16, ...), and their finite data never fires;
* or any reduction the hook **saved** for it (min, max, mean, std, variance, sum, prod, l1, l2, plain or
  abs; smdebug's `reduction_values`, whether or not the value was saved too) is NaN, or ±Inf unless
  `only_nan`. Reductions are never computed here, so a finite float16 tensor whose product would
  overflow does not fire. (With a host older than ABI 1.1, which cannot list saved reductions, they
  are read only for tensors saved without their value.)

The check is element-wise on the value (the spec's assumption), not on a sum or mean of it. A tensor
saved with only its shape gives no verdict; a step where no selected tensor gives one is skipped.

**Evidence.** The first offending `tensor` and `worker`, `what` (`value` or `reduction:<abs_><op>`),
`nan_count` and `inf_count` (for a value) or `value` (for a reduction), `only_nan`, `nonfinite_count`
(how many values and reductions fired) and `nonfinite`: up to 10 of them.)md";

  static Result<std::unique_ptr<ExplodingTensor>> create(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  ExplodingTensor(sdk::RuleContext ctx, Selection selection, bool only_nan)
      : Rule(std::move(ctx)), selection_(std::move(selection)), only_nan_(only_nan) {}
  Selection selection_;
  bool only_nan_;
};

// ---------------------------------------------------------------------------------------------
class AllZero final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      kRequiredCollectionNames.calibrated("weights,gradients"),
      kRequiredTensorRegex,
      sdk::param_double("threshold", "100",
                        "Percentage of zero elements at or above which a tensor fires the rule.")
          .range(0, 100),
  };
  static constexpr char kDescription[] = R"md(Detects tensors that are all zero, or zero in at least a given share of their elements.

**Inputs.** The tensors of `collection_names` ∪ the tensors matching `tensor_regex` (Python `re.search`).
At least one of the two is required: the rule is refused at creation without a selection (as smdebug's
"please provide either collection_names or tensor_regex"). The docs' example uses `tensor_regex` `.*`
with the `all` collection saved every 500 steps. Every worker that saved a tensor at the step is
inspected; steps are global steps, any mode.

**Verdict at a step.** For each selected tensor *x* saved with its value, and each worker,
*z* = 100 · count(*x* == 0) / size(*x*). The rule fires when **z ≥ threshold** for at least one
tensor (the comparison must be inclusive, or the default of 100 could never fire; the spec leaves ties
below 100 UNSURE and this rule uses ≥ throughout). `-0.0` counts as zero, NaN does not; integer and
boolean tensors count too (`False` is zero). Empty tensors, string and complex tensors, and tensors saved
without their value (reductions or shape only) give no verdict; a step where no selected tensor gives
one is skipped.

**Evidence.** The tensor with the largest share (`tensor`, `worker`, `zero_percent`, `zero_count`,
`size`), `threshold`, `tensors_at_or_above` and `at_or_above`: up to 10 of them.

**Calibrated profile.** `collection_names` `weights,gradients` (no `tensor_regex`), `threshold` 100.
The docs' `.*` also selects tensors that are legitimately all zero: biases initialised to zero (the
Keras and many transformer defaults), predictions of a batch that are all class 0, a ReLU layer's
output on one batch. Weights that are all zero cannot break their symmetry, and a gradient that is
all zero brings no learning signal: both are the defect this rule names. On the labelled pathology
runs it fires on the all-zero layer and stays quiet on every run without one (docs/verdict-quality.md).)md";

  static Result<std::unique_ptr<AllZero>> create(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  AllZero(sdk::RuleContext ctx, Selection selection, double threshold)
      : Rule(std::move(ctx)), selection_(std::move(selection)), threshold_(threshold) {}
  Selection selection_;
  double threshold_;
};

// ---------------------------------------------------------------------------------------------
class UnchangedTensor final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      kRequiredCollectionNames.calibrated("weights"),
      kRequiredTensorRegex,
      sdk::param_int("num_steps", "3", "How many saved steps of a tensor (the current one included) must agree.")
          .min(1),
      sdk::param_double("rtol", "1e-05", "Relative tolerance of numpy.allclose.").min(0).calibrated("0"),
      sdk::param_double("atol", "1e-08", "Absolute tolerance of numpy.allclose.").min(0).calibrated("0"),
      sdk::param_bool("equal_nan", "False", "Whether NaN compares equal to NaN (numpy.allclose's equal_nan)."),
      sdk::param_double("vanishing_gradient_threshold", "0",
                        "An unchanged tensor whose gradient's mean absolute value is above 0 but below this does "
                        "not fire: its gradient vanishes, VanishingGradient's finding (a Vigil addition).")
          .min(0)
          .calibrated("0.0000001"),
      sdk::param_bool("train_steps_only", "False",
                      "Compare only the tensor's values saved at TRAIN steps, where the optimizer can change "
                      "them; other steps are not judged (a Vigil addition).")
          .calibrated("True"),
  };
  static constexpr char kDescription[] = R"md(Detects tensors that stop changing across saved steps.

**Inputs.** The tensors of `collection_names` ∪ the tensors matching `tensor_regex` (Python `re.search`);
at least one is required (the rule is refused at creation without a selection). The docs' example uses
the `losses` collection. Every worker that saved a tensor at the step is inspected; steps are global
steps, and a tensor's history runs over all modes (a loss saved in TRAIN and EVAL steps is one history).

**Verdict at step s.** For each selected tensor *t* saved at *s*, and each worker: *P* = the last
`num_steps` steps ≤ *s* at which *t* was saved (smdebug's `prev_steps`; *s* included; the steps need not
be consecutive, and steps before `start_step` count). With fewer than `num_steps` such steps the tensor
does not fire. Otherwise the rule fires when the value at every step *p* of *P* is close to the value at
*s*: `numpy.allclose(value_p, value_s, rtol, atol, equal_nan)`, i.e. |v_p − v_s| ≤ atol + rtol·|v_s|
element-wise, with NaN equal to NaN only when `equal_nan`, an infinity equal only to the same infinity,
float32 pairs compared in float32 arithmetic as numpy does, and different shapes never close.

**UNSURE reading.** The comparison is star-shaped (every step against *s*), not chained between
consecutive steps; the two agree for exact equality. A tensor/worker missing its value at one of the
steps of *P* (reduction-only, another worker) gives no verdict; string and complex tensors give none; a
step where no selected tensor gives one is skipped.

With `vanishing_gradient_threshold` above 0, an unchanged tensor whose gradient at *s* (on the same
worker) has a mean absolute value above 0 but below it does not fire; its gradient is the tensor of
the `gradients` collection whose name ends with "/" and the tensor's name (smdebug's
`gradient/<parameter>`). A tensor without such a gradient is judged as before. A step where every
selected tensor has fewer than `num_steps` saved steps is reported as not judged. With
`train_steps_only`, *P* holds only the TRAIN-mode steps at which *t* was saved, and steps of other modes
are not judged: weights saved during an evaluation phase are the same at every step of it by design.

**Evidence.** The first unchanged `tensor` and `worker`, `steps` (*P*), `num_steps`, `rtol`, `atol`,
`equal_nan`, `tensors_unchanged` and `unchanged`: up to 10 tensor/worker pairs.

**Calibrated profile.** `collection_names` `weights`, `rtol` 0 and `atol` 0 (bit-identical values),
`vanishing_gradient_threshold` 1e-7 (VanishingGradient's default threshold); `num_steps` stays 3. The
docs' `losses` never stay unchanged, even when the model does not train (every batch differs), so
they miss frozen layers. A parameter that trains moves, however slowly: slow movement is
WeightUpdateRatio's finding, and numpy's tolerances would take a weight updated by 1e-6 of itself per
step for an unchanged one. A weight whose gradient vanishes without being zero (1e-20 deep in a
sigmoid stack) stays bit-identical as well, for as long as its updates round away, and may start to
move later: VanishingGradient reports that cause. A zero gradient (a dead or disconnected layer) or an
ordinary one (a layer left out of the optimizer, a learning rate too small to change a float) still
fires. `train_steps_only` True: only training steps can change a weight, and a job that saves its
weights while it evaluates (smdebug's own healthy MLP run saves them at every EVAL step) would
otherwise report every weight unchanged over the evaluation. On the labelled pathology runs this
finds the three unchanged layers without a false positive (docs/verdict-quality.md).)md";

  static Result<std::unique_ptr<UnchangedTensor>> create(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  struct Options {
    int64_t num_steps;
    double rtol;
    double atol;
    bool equal_nan;
    double vanishing_gradient_threshold;
    bool train_steps_only;
  };
  // The mean |gradient| of `name` at the step on `worker`: the value of the `gradients` collection's
  // tensor named "<prefix>/<name>" (smdebug's gradient/<parameter>); nullopt without one.
  Result<std::optional<double>> gradient_mean_abs(const std::string& name, vigil_step step, const std::string& worker,
                                                   std::optional<std::vector<std::string>>& gradients) const;
  // Whether global step `step` is a TRAIN step (train_steps_only); a step's mode never changes, so
  // each is asked of the host once.
  Result<bool> is_train_step(vigil_step step);
  UnchangedTensor(sdk::RuleContext ctx, Selection selection, Options options)
      : Rule(std::move(ctx)), selection_(std::move(selection)), options_(options) {}

  // No values are kept between steps (they would cost num_steps copies of every selected tensor):
  // the window is read again at each step.
  Selection selection_;
  Options options_;
  std::map<vigil_step, bool> train_step_;  // is_train_step's answers
};

// ---------------------------------------------------------------------------------------------
class TensorVariance final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      kRequiredCollectionNames.calibrated("weights"),
      kRequiredTensorRegex,
      sdk::param_double("max_threshold", nullptr, "The rule fires when a tensor's variance is above this (strictly).")
          .min(0)
          .calibrated("4"),
      sdk::param_double("min_threshold", nullptr, "The rule fires when a tensor's variance is below this (strictly).")
          .min(0)
          .calibrated("0.00001"),
      sdk::param_bool("min_about_zero", "False",
                      "Compare min_threshold with the mean square (the variance about zero) instead of the "
                      "variance, so that a constant non-zero tensor does not fire (a Vigil addition).")
          .calibrated("True"),
  };
  static constexpr char kDescription[] = R"md(Detects tensors whose variance is too high or too low.

**Inputs.** The tensors of `collection_names` ∪ the tensors matching `tensor_regex` (Python `re.search`);
at least one is required (the rule is refused at creation without a selection). The docs' example uses the
`weights` collection saved every 500 steps. Every worker that saved a tensor at the step is inspected;
steps are global steps, any mode.

**Verdict at a step.** For each selected tensor and worker, *v* = `reduction_value(step, "variance")`: a
saved `variance` reduction when the hook saved one, otherwise numpy's `np.var` of the value (population
variance, ddof 0; float32 values give a float32 result). The rule fires when (`max_threshold` is set and
**v > max_threshold**) or (`min_threshold` is set and **v < min_threshold**), for at least one tensor.
Both comparisons are strict (the spec leaves this UNSURE). Neither threshold has a default: with none set
the rule can never fire (a warning is logged at creation). NaN never fires (an empty tensor's variance
is NaN); a tensor/worker with neither a value nor a saved variance gives no verdict; string tensors
give none; a step where no selected tensor gives one is skipped.

With `min_about_zero`, `min_threshold` is compared with the mean square *v* + mean² (the variance
about zero, from the same saved or computed reductions) instead of *v*; `max_threshold` still with *v*.

**Evidence.** The first offending `tensor` and `worker`, its `variance` (and `mean_square` with
`min_about_zero`), which `threshold` was crossed (`above_max` / `below_min` with `max_threshold` /
`min_threshold`), `tensors_outside` and `outside`: up to 10 tensor/worker pairs.

**Calibrated profile.** `collection_names` `weights`, `max_threshold` 4, `min_threshold` 1e-5,
`min_about_zero` True. The bounds come from the scale of weight initialisations rather than from the
labelled runs: the widest common one is an embedding's N(0, 1) (variance 1; Kaiming's 2 / fan_in
reaches 2 only for a fan-in of 1), so a variance above 4 (a standard deviation above 2) is out of
any initialisation's range and means weights that have grown or were drawn at the wrong scale;
the common initialisations stay above 1e-5 for fan-ins up to tens of thousands (PyTorch's default
1 / (3 fan_in) up to 33,000, Kaiming's 2 / fan_in up to 200,000; the 0.02 standard deviation of
transformer initialisations gives 4e-4), so a mean square below 1e-5 means weights that are, or have
collapsed to, nearly zero. The mean square, not the variance, is compared with the lower
bound because normalisation layers' scales (in `weights` with smdebug's PyTorch collections) start as
all ones: no variance, yet nothing collapsed. On the labelled pathology runs this finds the three runs
with extreme weight scales (all-zero, 8.03 next to 1e-4, 1e-10) and stays quiet on the others, whose
weights range from 7.7e-5 to 1.09 (docs/verdict-quality.md).)md";

  static Result<std::unique_ptr<TensorVariance>> create(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  TensorVariance(sdk::RuleContext ctx, Selection selection, std::optional<double> max_threshold,
                 std::optional<double> min_threshold, bool min_about_zero)
      : Rule(std::move(ctx)),
        selection_(std::move(selection)),
        max_threshold_(max_threshold),
        min_threshold_(min_threshold),
        min_about_zero_(min_about_zero) {}
  Selection selection_;
  std::optional<double> max_threshold_;
  std::optional<double> min_threshold_;
  bool min_about_zero_;
};

// ---------------------------------------------------------------------------------------------
class WeightUpdateRatio final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_int("num_steps", nullptr,
                     "How far back the previous weights may be (in steps of the judged mode). Unset: the "
                     "tensor's previous saved step, however far.")
          .min(1),
      sdk::param_double("large_threshold", "10.0", "The rule fires when an update ratio is above this (strictly).")
          .min(0),
      sdk::param_double("small_threshold", "0.00000001",
                        "The rule fires when an update ratio is below this (strictly).")
          .min(0),
      sdk::param_double("epsilon", "0.000000001", "Added to the norm of the previous weights (no division by zero).")
          .min(0),
  };
  static constexpr char kDescription[] = R"md(Detects weight updates that are too large or too small relative to the weights.

**Inputs.** Every tensor of the `weights` collection (SageMaker attaches `weights` with `save_interval`
500; the docs advise saving every `num_steps` steps), on every worker that saved it.

**Mode.** If the trial holds any TRAIN-mode step, only TRAIN steps are judged and steps are counted in
TRAIN mode steps (a global step of another mode is skipped, no verdict); otherwise every step is judged
in GLOBAL steps. The choice is re-made at each step, as TRAIN steps appear.

**Verdict at step s.** For each weight tensor *w* saved at *s*, and each worker, take the previous step
*p*: the tensor's newest saved step (of the judged mode) before *s*; with `num_steps` set, it must also
satisfy *s* − `num_steps` ≤ *p* (the spec leaves the choice UNSURE: the newest such step is used). With
no such *p* the tensor gives no verdict, so the first saved step is never judged. Otherwise

  ratio = ‖w_s − w_p‖₂ / (‖w_p‖₂ + epsilon)

with L2 norms over the flattened tensors, computed in float64, and the **previous** weights in the
denominator (both UNSURE in the spec: a mean-absolute norm or the current weights were possible). The rule
fires when **ratio > large_threshold** or **ratio < small_threshold** (both strict) for at least one
tensor. A weight that does not change gives ratio 0 and fires ("too small"); NaN never fires; different
shapes at *p* and *s*, or a missing value at *p* on that worker, give no verdict; a step where no weight
gives one is skipped.

**Evidence.** The first offending `tensor` and `worker`, `mode`, `step` and `previous_step` (in steps of
that mode), `ratio`, `update_norm`, `previous_norm`, which bound was crossed (`too_large` or `too_small`),
the thresholds, `tensors_outside` and `outside`: up to 10 tensor/worker pairs.)md";

  static Result<std::unique_ptr<WeightUpdateRatio>> create(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  struct Options {
    std::optional<int64_t> num_steps;
    double large_threshold;
    double small_threshold;
    double epsilon;
  };
  WeightUpdateRatio(sdk::RuleContext ctx, Options options) : Rule(std::move(ctx)), options_(options) {}

  // The previous weights are read again at each step rather than kept (a copy of every weight).
  Options options_;
};

// ---------------------------------------------------------------------------------------------
class SimilarAcrossRuns final : public sdk::Rule {
 public:
  static constexpr uint32_t kFlags = VIGIL_RULEF_MULTI_TRIAL;
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_string_list("collection_names", nullptr,
                             "Collections whose tensors are compared (comma-separated). With tensor_regex, the union."),
      sdk::param_string_list("tensor_regex", nullptr,
                             "Regexes (comma-separated, matched anywhere in the name) of tensors to compare. With "
                             "neither parameter, every tensor of the run is compared."),
  };
  static constexpr char kDescription[] = R"md(Detects tensors that differ between this run and other runs.

**Inputs.** The base trial and one or more other trials, given as SageMaker's `other_trial_0`,
`other_trial_1`, ... keys or the docs' comma-separated `other_trials` (the host reads both; the rule is
refused at creation without one, like smdebug's "Required argument other_trials ... is missing"). The
compared tensors are the base trial's tensors of `collection_names` ∪ those matching `tensor_regex`
(Python `re.search`), or every tensor of the base trial when neither is given. Steps are global steps of
both runs, any mode.

**Verdict at step s.** For each other trial, the rule first waits until that trial has step *s* (it
follows a live run like the base trial); a trial that never saved *s*, or has ended before it, gives no
verdict at *s*. Then for each selected tensor saved at *s* in both runs, it compares the workers that
saved it in both (when they share no worker name, the first worker of each). The rule fires when, for at
least one tensor, the values **differ**: `numpy.allclose(value_this_run, value_other_run)` is false with
numpy's defaults (rtol 1e-5, atol 1e-8, equal_nan False, so NaN always differs; float32 pairs compared in
float32 arithmetic), or the shapes differ, or (string tensors) any element differs. This reading of
"differ" (not allclose rather than not exactly equal) is the spec's UNSURE choice. A tensor missing in
the other run, or saved there without its value, gives no verdict; a step where nothing was compared is
skipped.

**Evidence.** The first differing `tensor`, `worker` and `other_worker`, `other_trial` (`other_trial_0`,
...), `shape` and `other_shape`, `max_abs_diff`, `tensors_different` and `different`: up to 10 of them.)md";

  static Result<std::unique_ptr<SimilarAcrossRuns>> create(sdk::RuleContext ctx);
  Result<bool> invoke_at_step(vigil_step step) override;

 private:
  SimilarAcrossRuns(sdk::RuleContext ctx, Selection selection)
      : Rule(std::move(ctx)), selection_(std::move(selection)) {}
  Selection selection_;
};

}  // namespace vigil::rules::tensor
