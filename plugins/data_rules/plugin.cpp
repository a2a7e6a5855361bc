// The "data" family plugin: registration and documentation (the descriptions become docs/rules.md).
#include "data_rules.h"

namespace {

constexpr const char* kClassImbalanceDoc = R"md(Detects imbalanced classes in the labels, and classes whose labels are mostly mispredicted (SageMaker's `ClassImbalance`).

**Inputs.** At each global step (any mode), the tensors saved at that step whose names match `labels_regex` and `predictions_regex` (Python `re.search`, unanchored). Labels are class values; predictions are class values too, or per-class scores when `argmax` is True (the argmax over the last axis is taken, the first maximum wins, a NaN wins as in numpy). With `interpret_predictions` (and `argmax` False) the predictions are read by their shape and range: an (n, k) matrix with k ≥ 2 for n labels is argmax'd the same way; n values that are not all integral but all lie in [0, 1] (one column of probabilities, as XGBoost's `binary:logistic` saves) become class 1 above 0.5 and class 0 otherwise (NaN stays NaN); anything else is used as it is. The two lists are sorted by name and paired position by position (Python's `zip`: the longer list's extra tensors are ignored); within a pair, each worker's labels go with the same worker's predictions. A pair whose label and prediction counts differ fails the rule with an error. Steps where no pair can be read are skipped. No collections come from the rules configuration; the docs' example saves a custom collection with include `.*labels|.*predictions`.

**Verdict.** Across every step seen, per class (each distinct label value; NaN labels form one class, as `np.unique` groups NaNs) the rule accumulates the number of labels and the number of mispredictions (prediction `!=` label, numpy semantics, so a NaN prediction or label is always a misprediction). Nothing is judged until at least `samples` labels have been accumulated (steps before that return False). From then on, at every step that has labels and predictions, it fires when

* `max(count) / min(count) > threshold_imbalance` over the classes seen in the labels (a class that appears only in the predictions does not count), or
* `mispredicted(c) / count(c) > threshold_misprediction` for some class c (with `misprediction_classes` `underrepresented`, only for the classes with fewer labels than half a balanced share: 2 · k · count(c) < labels seen, k the number of classes; with `confidence` above 0.5, the one-sided Wilson lower bound of the rate at that confidence must exceed the threshold instead of the rate itself).

Both comparisons are strict. A step before `samples` labels is reported as not judged (not enough data).

**Evidence.** The label and prediction tensors of the step, `labels_seen`, the number of classes, `class_counts` (every class when there are at most 50, else only the largest and smallest), `imbalance_ratio` with the largest and smallest classes, `threshold_imbalance` and whether it was exceeded, `misprediction_rate_above_threshold` (class → rate, at most 50), the worst misprediction class and rate, `threshold_misprediction`, `classes_checked_for_misprediction`, `misprediction_classes` and `confidence`.

**UNSURE points (spec §2.14) and the reading implemented.** Counts accumulate across steps (the pathology labels agree: their verdicts are cumulative); the verdict is given at every step once `samples` labels have been seen, not only once; the imbalance is max/min over the classes present in the labels; several matching tensors are paired by name order.

**Calibrated profile.** `interpret_predictions` True, `misprediction_classes` `underrepresented`, `confidence` 0.95; the thresholds and `samples` keep SageMaker's values. Probability predictions are thresholded or argmax'd: compared as they are with the labels, every label of a `binary:logistic` model counts as mispredicted. The misprediction check is kept for the classes the imbalance hurts, its purpose: on balanced data a class that is still being learnt early in training is mostly mispredicted for a while (on a labelled run whose frozen layer slows one class down, its cumulative rate stays above 0.7 for four judged evaluations), which is not an imbalance and which Confusion judges. The Wilson bound keeps a small class from being judged on a handful of labels (4 of 5 mispredicted: rate 0.8, lower bound 0.44 at the one-sided 95 %). On the labelled pathology runs this removes the one false positive and keeps the true positive (docs/verdict-quality.md).)md";

constexpr const char* kConfusionDoc = R"md(Checks the confusion matrix of a classifier (SageMaker's `Confusion`): each predicted class should be mostly right and rarely confused with one other class.

**Inputs.** At each global step (any mode): the labels are the tensor named `labels` if the trial has a tensor of that name, otherwise the tensors of collection `labels_collection` saved at that step; the predictions likewise with `predictions` and `predictions_collection`. Several tensors are sorted by name and paired position by position (Python's `zip`), each worker's labels with the same worker's predictions; all pairs of the step go into one matrix. Both hold class indices (any numeric dtype; 1.0 is class 1), or with `interpret_predictions` the predictions are read by their shape and range as ClassImbalance reads them (an (n, k) matrix is argmax'd over its last axis, one column of probabilities in [0, 1] is thresholded at 0.5, class indices stay as they are). A value that is not a finite non-negative integer, or not below `category_no` when that is given, fails the rule with an error naming the tensor and value (numpy would fail to index the matrix with it), as does a pair whose lengths differ. Steps where the tensors are not saved are skipped. No collections come from the rules configuration.

**Verdict, per step.** C[label][prediction] counts the pairs of the last `window` evaluations (steps with labels and predictions; the default 1 is this step only, no accumulation across steps). Until `window` evaluations have been seen the step is not judged (not enough data). `category_no` defaults to max(max(labels), max(predictions)) + 1 of the step. With `criterion` `column_shares` (the default), for every predicted class (column) i with a column total Sᵢ = Σⱼ C[j][i] > 0 and Sᵢ ≥ `min_support`, the rule fires when

* `C[i][i] / Sᵢ < min_diag`, or
* `C[j][i] / Sᵢ > max_off_diag` for some j ≠ i.

Columns with Sᵢ = 0 are skipped. Both comparisons are strict. With `confidence` above 0.5 the shares are replaced by one-sided Wilson bounds at that confidence: the upper bound of the diagonal share must be below `min_diag`, the lower bound of an off-diagonal share above `max_off_diag`. With the defaults (0.9 and 0.1) the rule fires at any step where some predicted class has a precision below 90 %, which includes healthy runs early in training and any class with fewer than ten predictions and one mistake: this faithful behaviour makes the defaults fire on most real runs.

With `criterion` `pair_informedness`, every pair of classes i < j that the classifier mixes up (C[i][j] + C[j][i] > 0) is judged on the samples of both classes predicted as one of the two: nᵢ = C[i][i] + C[i][j] labels of i and nⱼ = C[j][j] + C[j][i] of j, each at least `min_support`. Its informedness (Youden's J of the two-class sub-classifier) is C[i][i] / nᵢ − C[j][i] / nⱼ: 1 when the two are told apart, 0 when the predictions carry no information about which of the two the label is, whatever the classifier's bias between them. The rule fires when it is below `max_informedness` (strict), or with `confidence` above 0.5 when its upper bound is (Agresti and Caffo's interval for a difference of proportions). A step where no column, or no pair, has the support is not judged.

**Evidence.** The label and prediction tensors, the number of pairs and the accuracy of the pooled matrix, `category_no` and whether it was inferred, `window`, `min_support` and `confidence`; for `column_shares` the number of violating columns, and for each (at most 20): the predicted class, its column total, the diagonal count and share, the label most often confused with it with its count and share, and which bound was crossed; plus `min_diag` and `max_off_diag`. For `pair_informedness`: `confused_pairs` and `pairs_confused` (at most 20): the two classes, their supports, the four counts, the informedness and its upper bound; plus `max_informedness`.

**UNSURE points (spec §2.15) and the reading implemented.** Column (predicted class) normalisation, as the spec derives from the smdebug tests (the docs' Σⱼ C[j][j] denominator contradicts them); the matrix of one step only; `category_no` inferred per step; columns without predictions skipped.

**Calibrated profile.** `interpret_predictions` True, `criterion` `pair_informedness` (`max_informedness` 0.25), `window` 8, `min_support` 30, `confidence` 0.95. A column's precision mixes two things: errors spread over all classes, and the classifier's bias between two classes (a healthy classifier that still over-predicts one class has a low precision there while telling the classes apart). Confusion of two classes is the lack of information between them, which informedness measures without either: a healthy 4-class classifier at 85 % accuracy with spread errors has pair informedness near 0.8 and stays quiet, two indistinguishable classes have it near 0 and fire. Early in training every classifier confuses classes for a while (on the labelled runs without a confusion, for up to six consecutive evaluations, while a class is being learnt); pooling 8 evaluations asks for a confusion that persists, and gives the bound enough labels, at the cost of reporting one only from the 8th evaluation. 30 labels per class and a 95 % bound keep a pair from being judged on a handful of samples. On the labelled pathology runs this removes the seven false positives and keeps the true positive (docs/verdict-quality.md); a genuine confusion that lasts fewer than 8 evaluations is not reported.)md";

constexpr const char* kCheckInputImagesDoc = R"md(Detects input images that are not normalised: a colour channel whose mean is far from 0 (SageMaker's `CheckInputImages`).

**Inputs.** At each global step (any mode), the tensors saved at that step whose names match `regex` (Python `re.search`; the rules configuration saves collection `input_image` with include `.*hybridsequential0_input_0` every 500 steps). Axis 0 is the batch (one image per entry); `channel` is the colour-channel axis (default 1, NCHW; negative values count from the end as in numpy, e.g. -1 for NHWC). A channel axis that is the batch axis or outside the tensor, or a channel count that changes between steps, fails the rule with an error. Steps without a matching tensor are skipped.

**Verdict.** Per tensor name, with every worker pooled, the rule accumulates across steps the number of images (the batch sizes) and, per channel, the sum and the count of the elements (double precision). Nothing is judged for a tensor until it has accumulated at least `threshold_samples` images (steps before that return False and are reported as not judged). From then on, at every step where the tensor is saved, the rule fires when for some channel c `|sum(c) / count(c)| > threshold_mean` (strict). NaN values make that channel's mean NaN, which never fires (numpy comparison semantics); ±Inf values make it fire.

**Evidence.** Per violating tensor: the tensor, `samples_seen`, the channel axis, every channel's mean, the channels above the threshold, `threshold_mean` and `threshold_samples`.

**UNSURE points (spec §2.18) and the reading implemented.** The means are cumulative over every image seen so far (the label's per-step-means variant gives the same verdicts on the pathology runs), one accumulator per tensor name, and the verdict is given at every step once enough images were seen.

**Calibrated profile.** The same as SageMaker's: it has no false verdict on the labelled pathology runs (the unnormalised images fire, the normalised ones stay quiet, with channel means of 0.5 against 0.003).)md";

constexpr const char* kNLPSequenceRatioDoc = R"md(Detects input sequences dominated by particular token ids, such as padding or unknown tokens (SageMaker's `NLPSequenceRatio`).

**Inputs.** At each global step (any mode), every tensor saved at that step whose name matches one of `tensor_regex` (comma-separated regexes, Python `re.search`; the rules configuration saves collection `input_sequence` with include `.*embedding0_input_0` every 500 steps), on every worker that saved it. Steps without a matching tensor are skipped.

**Verdict, per step.** `token_values` and `token_thresholds_percent` are comma-separated numbers paired by position. For each tensor, worker and pair (vᵢ, tᵢ): ratio = 100 · count(x == vᵢ) / size(x) over all the tensor's elements; the rule fires when ratio > tᵢ (strict). NaN elements never equal a token; an empty tensor gives 0/0 = NaN, which never fires. Nothing accumulates across steps.

**Evidence.** For each violation (at most 20 per step): the tensor, worker, token value, its count, the number of elements, the percentage and the threshold.

**UNSURE points (spec §2.19) and the reading implemented.** The ratio is over all elements of the tensor (not per sequence), per step and per worker; fewer thresholds than token values is refused at creation, and thresholds beyond the number of token values are ignored with a warning (Python's `zip`; the 2020 docs' default was "50,50" for the single token 0). Thresholds must be percentages in [0, 100].

**Calibrated profile.** The same as SageMaker's: it has no false verdict on the labelled pathology runs (padding-dominated sequences, 80 % padding, fire; the healthy ones, at most 19 %, stay quiet).)md";

}  // namespace

VIGIL_PLUGIN("vigil.builtin.data", "1.0.0",
             VIGIL_RULE(vigil::builtin::data::ClassImbalance, "vigil.builtin.ClassImbalance", "ClassImbalance",
                        kClassImbalanceDoc),
             VIGIL_RULE(vigil::builtin::data::Confusion, "vigil.builtin.Confusion", "Confusion", kConfusionDoc),
             VIGIL_RULE(vigil::builtin::data::CheckInputImages, "vigil.builtin.CheckInputImages", "CheckInputImages",
                        kCheckInputImagesDoc),
             VIGIL_RULE(vigil::builtin::data::NLPSequenceRatio, "vigil.builtin.NLPSequenceRatio", "NLPSequenceRatio",
                        kNLPSequenceRatioDoc));
