// The "data" family plugin: registration and documentation (the descriptions become docs/rules.md).
#include "data_rules.h"

namespace {

constexpr const char* kClassImbalanceDoc = R"md(Detects imbalanced classes in the labels, and classes whose labels are mostly mispredicted (SageMaker's `ClassImbalance`).

**Inputs.** At each global step (any mode), the tensors saved at that step whose names match `labels_regex` and `predictions_regex` (Python `re.search`, unanchored). Labels are class values; predictions are class values too, or per-class scores when `argmax` is True (the argmax over the last axis is taken, the first maximum wins, a NaN wins as in numpy). The two lists are sorted by name and paired position by position (Python's `zip`: the longer list's extra tensors are ignored); within a pair, each worker's labels go with the same worker's predictions. A pair whose label and prediction counts differ fails the rule with an error. Steps where no pair can be read are skipped. No collections come from the rules configuration; the docs' example saves a custom collection with include `.*labels|.*predictions`.

**Verdict.** Across every step seen, per class (each distinct label value; NaN labels form one class, as `np.unique` groups NaNs) the rule accumulates the number of labels and the number of mispredictions (prediction `!=` label, numpy semantics, so a NaN prediction or label is always a misprediction). Nothing is judged until at least `samples` labels have been accumulated (steps before that return False). From then on, at every step that has labels and predictions, it fires when

* `max(count) / min(count) > threshold_imbalance` over the classes seen in the labels (a class that appears only in the predictions does not count), or
* `mispredicted(c) / count(c) > threshold_misprediction` for some class c.

Both comparisons are strict.

**Evidence.** The label and prediction tensors of the step, `labels_seen`, the number of classes, `class_counts` (every class when there are at most 50, else only the largest and smallest), `imbalance_ratio` with the largest and smallest classes, `threshold_imbalance` and whether it was exceeded, `misprediction_rate_above_threshold` (class → rate, at most 50), the worst misprediction class and rate, and `threshold_misprediction`.

**UNSURE points (spec §2.14) and the reading implemented.** Counts accumulate across steps (the pathology labels agree: their verdicts are cumulative); the verdict is given at every step once `samples` labels have been seen, not only once; the imbalance is max/min over the classes present in the labels; several matching tensors are paired by name order.)md";

constexpr const char* kConfusionDoc = R"md(Checks the confusion matrix of a classifier (SageMaker's `Confusion`): each predicted class should be mostly right and rarely confused with one other class.

**Inputs.** At each global step (any mode): the labels are the tensor named `labels` if the trial has a tensor of that name, otherwise the tensors of collection `labels_collection` saved at that step; the predictions likewise with `predictions` and `predictions_collection`. Several tensors are sorted by name and paired position by position (Python's `zip`), each worker's labels with the same worker's predictions; all pairs of the step go into one matrix. Both hold class indices (any numeric dtype; 1.0 is class 1). A value that is not a finite non-negative integer, or not below `category_no` when that is given, fails the rule with an error naming the tensor and value (numpy would fail to index the matrix with it), as does a pair whose lengths differ. Steps where the tensors are not saved are skipped. No collections come from the rules configuration.

**Verdict, per step.** C[label][prediction] counts the pairs of this step only (no accumulation across steps). `category_no` defaults to max(max(labels), max(predictions)) + 1 of the step. For every predicted class (column) i with a column total Sᵢ = Σⱼ C[j][i] > 0, the rule fires when

* `C[i][i] / Sᵢ < min_diag`, or
* `C[j][i] / Sᵢ > max_off_diag` for some j ≠ i.

Columns with Sᵢ = 0 are skipped. Both comparisons are strict. With the defaults (0.9 and 0.1) the rule fires at any step where some predicted class has a precision below 90 %, which includes healthy runs early in training and any class with fewer than ten predictions and one mistake: this faithful behaviour makes the defaults fire on most real runs.

**Evidence.** The label and prediction tensors, the number of pairs, the step's accuracy, `category_no` and whether it was inferred, the number of violating columns, and for each (at most 20): the predicted class, its column total, the diagonal count and share, the label most often confused with it with its count and share, and which bound was crossed; plus `min_diag` and `max_off_diag`.

**UNSURE points (spec §2.15) and the reading implemented.** Column (predicted class) normalisation, as the spec derives from the smdebug tests (the docs' Σⱼ C[j][j] denominator contradicts them); the matrix of one step only; `category_no` inferred per step; columns without predictions skipped.)md";

constexpr const char* kCheckInputImagesDoc = R"md(Detects input images that are not normalised: a colour channel whose mean is far from 0 (SageMaker's `CheckInputImages`).

**Inputs.** At each global step (any mode), the tensors saved at that step whose names match `regex` (Python `re.search`; the rules configuration saves collection `input_image` with include `.*hybridsequential0_input_0` every 500 steps). Axis 0 is the batch (one image per entry); `channel` is the colour-channel axis (default 1, NCHW; negative values count from the end as in numpy, e.g. -1 for NHWC). A channel axis that is the batch axis or outside the tensor, or a channel count that changes between steps, fails the rule with an error. Steps without a matching tensor are skipped.

**Verdict.** Per tensor name, with every worker pooled, the rule accumulates across steps the number of images (the batch sizes) and, per channel, the sum and the count of the elements (double precision). Nothing is judged for a tensor until it has accumulated at least `threshold_samples` images (steps before that return False). From then on, at every step where the tensor is saved, the rule fires when for some channel c `|sum(c) / count(c)| > threshold_mean` (strict). NaN values make that channel's mean NaN, which never fires (numpy comparison semantics); ±Inf values make it fire.

**Evidence.** Per violating tensor: the tensor, `samples_seen`, the channel axis, every channel's mean, the channels above the threshold, `threshold_mean` and `threshold_samples`.

**UNSURE points (spec §2.18) and the reading implemented.** The means are cumulative over every image seen so far (the label's per-step-means variant gives the same verdicts on the pathology runs), one accumulator per tensor name, and the verdict is given at every step once enough images were seen.)md";

constexpr const char* kNLPSequenceRatioDoc = R"md(Detects input sequences dominated by particular token ids, such as padding or unknown tokens (SageMaker's `NLPSequenceRatio`).

**Inputs.** At each global step (any mode), every tensor saved at that step whose name matches one of `tensor_regex` (comma-separated regexes, Python `re.search`; the rules configuration saves collection `input_sequence` with include `.*embedding0_input_0` every 500 steps), on every worker that saved it. Steps without a matching tensor are skipped.

**Verdict, per step.** `token_values` and `token_thresholds_percent` are comma-separated numbers paired by position. For each tensor, worker and pair (vᵢ, tᵢ): ratio = 100 · count(x == vᵢ) / size(x) over all the tensor's elements; the rule fires when ratio > tᵢ (strict). NaN elements never equal a token; an empty tensor gives 0/0 = NaN, which never fires. Nothing accumulates across steps.

**Evidence.** For each violation (at most 20 per step): the tensor, worker, token value, its count, the number of elements, the percentage and the threshold.

**UNSURE points (spec §2.19) and the reading implemented.** The ratio is over all elements of the tensor (not per sequence), per step and per worker; fewer thresholds than token values is refused at creation, and thresholds beyond the number of token values are ignored with a warning (Python's `zip`; the 2020 docs' default was "50,50" for the single token 0). Thresholds must be percentages in [0, 100].)md";

}  // namespace

VIGIL_PLUGIN("vigil.builtin.data", "1.0.0",
             VIGIL_RULE(vigil::builtin::data::ClassImbalance, "vigil.builtin.ClassImbalance", "ClassImbalance",
                        kClassImbalanceDoc),
             VIGIL_RULE(vigil::builtin::data::Confusion, "vigil.builtin.Confusion", "Confusion", kConfusionDoc),
             VIGIL_RULE(vigil::builtin::data::CheckInputImages, "vigil.builtin.CheckInputImages", "CheckInputImages",
                        kCheckInputImagesDoc),
             VIGIL_RULE(vigil::builtin::data::NLPSequenceRatio, "vigil.builtin.NLPSequenceRatio", "NLPSequenceRatio",
                        kNLPSequenceRatioDoc));
