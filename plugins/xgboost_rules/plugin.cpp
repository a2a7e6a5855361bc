// The "xgboost" family plugin: registration and documentation (the descriptions become docs/rules.md).
#include "xgboost_rules.h"

namespace {

constexpr const char* kTreeDepthDoc = R"md(Detects XGBoost trees deeper than expected (SageMaker's `TreeDepth`).

**Inputs.** The tensor `trees/Node` of the XGBoost hook's `trees` collection: the node ids of the tree built at boosting round s, saved at step s (global steps; the hook saves in GLOBAL mode). Every worker that saved it at the step is judged. No collections come from the rules configuration (the docs' example names the collection "tree"; the hook's key is `trees`). Steps without the tensor, or with an empty one, are skipped.

**Verdict, per step and worker.** depth = ⌊log₂(max node id + 1)⌋, the depth of the largest node id in a breadth-first numbered binary tree (root at depth 0). The rule fires when depth > `depth` (strict). A NaN node id makes the maximum NaN, which never fires.

**Evidence.** The tensor, the worker, the number of nodes, the largest node id, the depth and `threshold_depth`.

**UNSURE points (spec §2.16) and the reading implemented.** The docs define the depth as log₂ of the largest node id; the rounding is not documented. Raw log₂ would make every full tree of `max_depth` 4 fire (largest id 30, log₂ 30 = 4.9 > 4), which contradicts the old integration configuration where a model with `max_depth` 4 does not fire and one with `max_depth` 100 does; ⌊log₂(id + 1)⌋ is exact for breadth-first numbering and never exceeds `max_depth`. XGBoost numbers nodes in creation order, so for unbalanced trees this is a lower bound of the structural depth.)md";

constexpr const char* kFeatureImportanceOverweightDoc = R"md(Detects a model that relies on a few features (SageMaker's `FeatureImportanceOverweight`).

**Inputs.** At each global step, every tensor saved at that step whose name matches one of `tensor_regex` (comma-separated regexes, Python `re.search`). The XGBoost hook saves one scalar per feature and importance type, `feature_importance/<type>/<feature>`, normalised to sum to 1 within each type; the default `.*feature_importance/weight` selects the `weight` importances. The rules configuration saves collection `feature_importance` every 500 steps. Each worker is judged on its own tensors. A matched tensor that is not a single value fails the rule with an error (a `tensor_regex` that selects more than importances). Steps without a matching tensor are skipped.

**Verdict, per step and worker.** The matched values are sorted in descending order (NaN last) and the largest `nfeatures` are summed; the rule fires when the sum > `threshold` (strict). With fewer features than `nfeatures`, all of them are summed, which for normalised importances is 1 and fires with any threshold below 1. A NaN among the summed values makes the sum NaN, which never fires.

**Evidence.** The worker, the number of features, `nfeatures`, the summed features (tensor and value, largest first, at most 20), their sum and `threshold`.

**UNSURE points (spec §2.17) and the reading implemented.** The comparison is strict; the values are used as saved (not re-normalised: the hook already normalises them); fewer features than `nfeatures` fires as described.)md";

constexpr const char* kCreateXgboostReportDoc = R"md(Writes an XGBoost training report (SageMaker's `CreateXgboostReport`). It never reports an issue: its output is the report.

**Inputs.** At each global step, what smdebug's XGBoost hook saves, selected by the hook's own name patterns: `hyperparameters/<name>` (numbers or strings, the rules configuration saves them at step 0), metrics named `^[a-zA-z]+-[a-zA-z0-9]+$` such as `train-rmse` or `validation-auc`, `feature_importance/<type>/<feature>`, and the validation `labels` and `predictions` (the rules configuration saves metrics, feature importance, labels and predictions every 5 steps). Values are the first worker's. Steps without any of these are skipped; a value that cannot be read for a skip reason is left out.

**Verdict.** Always False. The rule accumulates: the latest hyperparameters; every metric's series over the steps; the latest step's feature importances; the latest step's labels and predictions; for classification, each class's share of right predictions at every step with labels and predictions.

**The report.** A self-contained HTML page (inline SVG plots and inline CSS; no script, no external resource) named `<RuleConfigurationName>.html` (characters other than letters, digits, `-`, `_` and `.` become `_`; `xgboost_report.html` when the name is empty), written in the host's output directory (ABI 1.1 `output_directory`: next to the evaluator's status file; the current directory with a host that lacks it). It is written atomically (temporary file in the same folder, then rename) at the first step with data, at most every 10 seconds while the trial grows, at the last saved step of an ended trial, and once more when the rule ends if anything changed. Sections: overview (steps, task and how it was determined, sizes); hyperparameters; label distribution (class counts, or a 20-bin histogram for regression); loss and metrics versus step (plot and first/last/min/max table); feature importance per type (weight, gain, cover, then others; the 20 largest); confusion matrix with its evaluation (heat map and table, accuracy, per-class precision, recall and F1, and the Confusion rule's default check: per predicted class a diagonal share of at least 0.9 and no off-diagonal share above 0.1); accuracy per class over iterations; ROC curve with its AUC (binary); residual distribution at the last step with mean, standard deviation, MAE and RMSE (regression); mean absolute validation error per label bin (10 equal-width bins, np.histogram semantics; regression). A section whose data is missing or does not apply says so.

**Task.** From `hyperparameters/objective` (`binary:*` binary classification, `multi:*` multiclass, `reg:*`, `count:*`, `survival:*`, `rank:*` regression), else inferred: per-class scores (2-D predictions) are multiclass; 0/1 labels with predictions in [0, 1] are binary; non-negative integer labels and predictions are multiclass; anything else is regression. Binary probabilities above 0.5 predict class 1; 2-D scores predict their argmax; a NaN prediction predicts no class.

**UNSURE points (spec §2.21) and the reading implemented.** SageMaker's report is a notebook rendered to HTML whose exact contents are not public: the sections follow the documented list. No trigger (assumed never to fire).)md";

}  // namespace

VIGIL_PLUGIN("vigil.builtin.xgboost", "1.0.0",
             VIGIL_RULE(vigil::builtin::xgboost::TreeDepth, "vigil.builtin.TreeDepth", "TreeDepth", kTreeDepthDoc),
             VIGIL_RULE(vigil::builtin::xgboost::FeatureImportanceOverweight,
                        "vigil.builtin.FeatureImportanceOverweight", "FeatureImportanceOverweight",
                        kFeatureImportanceOverweightDoc),
             VIGIL_RULE(vigil::builtin::xgboost::CreateXgboostReport, "vigil.builtin.CreateXgboostReport",
                        "CreateXgboostReport", kCreateXgboostReportDoc));
