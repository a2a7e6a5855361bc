// The "xgboost" family (TreeDepth, FeatureImportanceOverweight, CreateXgboostReport) through the real
// host, on trials written with Vigil's writer in the shape of smdebug's XGBoost hook output
// (smdebug-format.md §6.2: hyperparameters/<name>, metrics such as validation-auc,
// feature_importance/<type>/<feature>, labels, predictions, trees/<column>; GLOBAL mode, step =
// boosting round).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace vigil {
namespace {

using evaluate::RuleEvaluationStatus;
using namespace test;  // the suites' helpers: tests/support/test_support.h
// The XGBoost hook saves numbers as float64 (TensorSave's default is float32).
constexpr auto kF64 = format::ElementType::Float64;

// One boosting round: a GLOBAL step whose mode step is the round.
struct XgbRound {
  int64_t step;
  std::vector<TensorSave> tensors;
};

// The XGBoost hook's collections (smdebug-format.md §6.2).
std::vector<format::CollectionConfig> xgb_collections() {
  std::vector<format::CollectionConfig> out;
  for (const auto& [name, regex] : std::vector<std::pair<std::string, std::string>>{
           {"hyperparameters", "^hyperparameters/.*$"},
           {"metrics", "^[a-zA-z]+-[a-zA-z0-9]+$"},
           {"predictions", "^predictions$"},
           {"labels", "^labels$"},
           {"feature_importance", "^feature_importance/.*"},
           {"trees", "^trees/.*"}})
    out.push_back(format::CollectionConfig{.name = name, .include_regex = {regex}});
  return out;
}

// Writes one worker's rounds with the XGBoost hook's collections only (the last worker written
// writes the end marker).
void xgb_write_trial(const fs::path& dir, const std::vector<XgbRound>& rounds, WorkerOptions options = {}) {
  std::vector<TrialStep> steps;
  for (const auto& round : rounds) steps.push_back(TrialStep{round.step, Mode::Global, round.step, round.tensors});
  options.collections = xgb_collections();
  options.builtin_collections = false;
  write_trial(dir, steps, options);
}

// trees/<column> of a complete tree of depth `depth` (breadth-first ids 0 .. 2^(depth+1) - 2), as
// smdebug's parse_tree_model saves the round's tree.
std::vector<TensorSave> xgb_full_tree(int64_t round, int depth) {
  const int64_t n = (int64_t{1} << (depth + 1)) - 1;
  TensorSave tree{"trees/Tree", {}, {}, format::ElementType::Int64};
  TensorSave node{"trees/Node", {}, {}, format::ElementType::Int64};
  TensorSave id{"trees/ID", {}, {}, format::ElementType::String};
  TensorSave feature{"trees/Feature", {}, {}, format::ElementType::String};
  TensorSave yes{"trees/Yes", {}, {}, format::ElementType::String};
  TensorSave split{"trees/Split", {}, {}, kF64}, gain{"trees/Gain", {}, {}, kF64};
  for (int64_t i = 0; i < n; ++i) {
    const bool leaf = 2 * i + 1 >= n;
    tree.values.push_back(static_cast<double>(round));
    node.values.push_back(static_cast<double>(i));
    id.strings.push_back(std::to_string(round) + "-" + std::to_string(i));
    feature.strings.push_back(leaf ? "Leaf" : "f" + std::to_string(i % 4));
    yes.strings.push_back(leaf ? "nan" : std::to_string(round) + "-" + std::to_string(2 * i + 1));
    split.values.push_back(leaf ? kNaN : 0.5);
    gain.values.push_back(1.0 / static_cast<double>(i + 1));
  }
  return {tree, node, id, feature, yes, split, gain};
}

TensorSave xgb_scalar(const std::string& name, double v) { return TensorSave{name, {v}, {}, kF64}; }
TensorSave xgb_string(const std::string& name, const std::string& v) {
  return TensorSave{name, {}, {}, format::ElementType::String, {v}};
}

// feature_importance/<type>/<feature> scalars.
std::vector<TensorSave> xgb_importance(const std::string& type, const std::vector<std::pair<std::string, double>>& values) {
  std::vector<TensorSave> out;
  for (const auto& [f, v] : values) out.push_back(xgb_scalar("feature_importance/" + type + "/" + f, v));
  return out;
}

void xgb_append(std::vector<TensorSave>& to, const std::vector<TensorSave>& more) { to.insert(to.end(), more.begin(), more.end()); }

// =============================================================================================
// TreeDepth

TEST(XgbTreeDepth, FiresOnTreesDeeperThanTheThreshold) {
  ScratchDir dir;
  std::vector<XgbRound> rounds;
  const int depths[] = {2, 4, 5, 3};
  for (int64_t r = 0; r < 4; ++r) {
    XgbRound round{r, xgb_full_tree(r, depths[r])};
    round.tensors.push_back(xgb_scalar("train-rmse", 1.0 / static_cast<double>(r + 1)));
    rounds.push_back(round);
  }
  rounds.push_back(XgbRound{4, {xgb_scalar("train-rmse", 0.1)}});  // no tree saved: skipped
  xgb_write_trial(dir.path(), rounds);
  auto s = evaluate_rule("TreeDepth", dir.path());
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{2})) << seen(s);  // the depth-4 tree (ids up to 30) does not fire
  const auto& e = s.triggers[0].evidence.at(0);
  EXPECT_EQ(e["tensor"], "trees/Node");
  EXPECT_EQ(e["worker"], "worker_0");
  EXPECT_EQ(e["nodes"], 63);
  EXPECT_EQ(e["largest_node_id"], 62.0);
  EXPECT_EQ(e["depth"], 5.0);
  EXPECT_EQ(e["threshold_depth"], 4.0);
  EXPECT_EQ(trigger_steps(evaluate_rule("TreeDepth", dir.path(), {{"depth", "4.5"}})), (std::vector<int64_t>{2}));
  EXPECT_EQ(trigger_steps(evaluate_rule("TreeDepth", dir.path(), {{"depth", "1"}})), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(evaluate_rule("TreeDepth", dir.path(), {{"depth", "5"}}).status, RuleEvaluationStatus::NoIssuesFound);
}

TEST(XgbTreeDepth, NaNIdsNeverFireAndNoTreesIsNoData) {
  ScratchDir dir;
  xgb_write_trial(dir.path(), {XgbRound{0, {TensorSave{"trees/Node", {0, 1, 2, kNaN, 1000}, {}, kF64}}},
                               XgbRound{1, {TensorSave{"trees/Node", {}, {0}, format::ElementType::Int64}}}});
  auto s = evaluate_rule("TreeDepth", dir.path());
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  ScratchDir none;
  xgb_write_trial(none.path(), {XgbRound{0, {xgb_scalar("train-rmse", 1)}}});
  auto n = evaluate_rule("TreeDepth", none.path(), {{"depth", "0"}});
  EXPECT_EQ(n.status, RuleEvaluationStatus::NoIssuesFound) << seen(n);
}

TEST(XgbTreeDepth, EveryWorkerIsJudged) {
  ScratchDir dir;
  xgb_write_trial(dir.path(), {XgbRound{0, xgb_full_tree(0, 3)}}, {.num_workers = 2, .end_marker = false});
  xgb_write_trial(dir.path(), {XgbRound{0, xgb_full_tree(0, 6)}}, {.worker = "worker_1", .num_workers = 2});
  auto s = evaluate_rule("TreeDepth", dir.path());
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  ASSERT_EQ(s.triggers[0].evidence.size(), 1u);
  EXPECT_EQ(s.triggers[0].evidence[0]["worker"], "worker_1");
  EXPECT_EQ(s.triggers[0].evidence[0]["depth"], 6.0);
}

// =============================================================================================
// FeatureImportanceOverweight

TEST(XgbFeatureImportanceOverweight, FiresWhenTheTopFeaturesDominate) {
  ScratchDir dir;
  std::vector<TensorSave> balanced = xgb_importance("weight", {{"f0", 0.25}, {"f1", 0.25}, {"f2", 0.25}, {"f3", 0.25}});
  std::vector<TensorSave> dominated =
      xgb_importance("weight", {{"f0", 0.05}, {"f1", 0.5}, {"f2", 0.15}, {"f3", 0.2}, {"f4", 0.1}});
  xgb_append(balanced, xgb_importance("gain", {{"f0", 0.9}, {"f1", 0.1}}));  // not matched by the default regex
  xgb_write_trial(dir.path(), {XgbRound{0, balanced}, XgbRound{1, {xgb_scalar("train-rmse", 1)}},
                               XgbRound{2, dominated}});
  auto s = evaluate_rule("FeatureImportanceOverweight", dir.path());
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{2})) << seen(s);
  const auto& e = s.triggers[0].evidence.at(0);
  EXPECT_EQ(e["worker"], "worker_0");
  EXPECT_EQ(e["features"], 5);
  EXPECT_EQ(e["nfeatures"], 3);
  EXPECT_DOUBLE_EQ(e["top_sum"].get<double>(), 0.85);
  EXPECT_EQ(e["threshold"], 0.8);
  ASSERT_EQ(e["top_features"].size(), 3u);
  EXPECT_EQ(e["top_features"][0]["tensor"], "feature_importance/weight/f1");
  EXPECT_EQ(e["top_features"][1]["tensor"], "feature_importance/weight/f3");
  EXPECT_EQ(e["top_features"][2]["tensor"], "feature_importance/weight/f2");
  // The gain importances, selected explicitly: 0.9 + 0.1 at step 0.
  auto g = evaluate_rule("FeatureImportanceOverweight", dir.path(), {{"tensor_regex", ".*feature_importance/gain"}});
  EXPECT_EQ(trigger_steps(g), (std::vector<int64_t>{0})) << seen(g);
}

TEST(XgbFeatureImportanceOverweight, SumExactlyAtTheThresholdDoesNotFire) {
  ScratchDir dir;
  xgb_write_trial(dir.path(), {XgbRound{0, xgb_importance("weight", {{"a", 0.5}, {"b", 0.125}, {"c", 0.125},
                                                                     {"d", 0.125}, {"e", 0.125}})}});
  EXPECT_EQ(evaluate_rule("FeatureImportanceOverweight", dir.path(), {{"threshold", "0.75"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
  EXPECT_EQ(trigger_steps(evaluate_rule("FeatureImportanceOverweight", dir.path(), {{"threshold", "0.74"}})),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(evaluate_rule("FeatureImportanceOverweight", dir.path(), {{"nfeatures", "1"}, {"threshold", "0.5"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
}

TEST(XgbFeatureImportanceOverweight, FewerFeaturesThanNFeaturesSumToOne) {
  ScratchDir dir;
  xgb_write_trial(dir.path(), {XgbRound{0, xgb_importance("weight", {{"f0", 0.6}, {"f1", 0.4}})}});
  auto s = evaluate_rule("FeatureImportanceOverweight", dir.path());
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  EXPECT_DOUBLE_EQ(s.triggers[0].evidence.at(0)["top_sum"].get<double>(), 1.0);
  EXPECT_EQ(s.triggers[0].evidence.at(0)["top_features"].size(), 2u);
}

TEST(XgbFeatureImportanceOverweight, NaNSortsLastAndPoisonsASumThatReachesIt) {
  ScratchDir dir;
  xgb_write_trial(dir.path(), {XgbRound{0, xgb_importance("weight", {{"f0", kNaN}, {"f1", 0.9}, {"f2", 0.05},
                                                                     {"f3", 0.05}})}});
  auto s = evaluate_rule("FeatureImportanceOverweight", dir.path());
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  EXPECT_DOUBLE_EQ(s.triggers[0].evidence.at(0)["top_sum"].get<double>(), 1.0);
  EXPECT_EQ(evaluate_rule("FeatureImportanceOverweight", dir.path(), {{"nfeatures", "4"}}).status,
            RuleEvaluationStatus::NoIssuesFound);
}

TEST(XgbFeatureImportanceOverweight, NonScalarMatchIsAnErrorAndNoMatchIsNoData) {
  ScratchDir dir;
  xgb_write_trial(dir.path(), {XgbRound{0, {TensorSave{"predictions", {0.1, 0.9}, {}, kF64}, xgb_scalar("train-rmse", 1)}}});
  auto none = evaluate_rule("FeatureImportanceOverweight", dir.path());
  EXPECT_EQ(none.status, RuleEvaluationStatus::NoIssuesFound) << seen(none);
  auto bad = evaluate_rule("FeatureImportanceOverweight", dir.path(), {{"tensor_regex", "predictions"}});
  EXPECT_EQ(bad.status, RuleEvaluationStatus::Error);
  EXPECT_NE(bad.details.find("predictions holds 2 values"), std::string::npos) << bad.details;
}

TEST(XgbFeatureImportanceOverweight, WorkersAreJudgedApart) {
  ScratchDir dir;
  xgb_write_trial(dir.path(), {XgbRound{0, xgb_importance("weight", {{"f0", 0.25}, {"f1", 0.25}, {"f2", 0.25}, {"f3", 0.25}})}}, {.num_workers = 2, .end_marker = false});
  xgb_write_trial(dir.path(), {XgbRound{0, xgb_importance("weight", {{"f0", 0.7}, {"f1", 0.1}, {"f2", 0.1}, {"f3", 0.1}})}}, {.worker = "worker_1", .num_workers = 2});
  auto s = evaluate_rule("FeatureImportanceOverweight", dir.path());
  ASSERT_EQ(trigger_steps(s), (std::vector<int64_t>{0})) << seen(s);
  ASSERT_EQ(s.triggers[0].evidence.size(), 1u);
  EXPECT_EQ(s.triggers[0].evidence[0]["worker"], "worker_1");
}

// =============================================================================================
// CreateXgboostReport

std::string xgb_read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Checks that `html` is well-formed markup (every element closed in order, attributes quoted,
// only the five entities the report uses), after the doctype. Returns "" or what is wrong.
std::string xgb_markup_problem(const std::string& html) {
  const std::string doctype = "<!DOCTYPE html>\n";
  if (html.rfind(doctype, 0) != 0) return "no <!DOCTYPE html> first";
  std::vector<std::string> open;
  size_t i = doctype.size();
  auto check_text = [&](size_t from, size_t to) -> std::string {
    for (size_t k = from; k < to; ++k) {
      if (html[k] == '>') return "a raw '>' in text at " + std::to_string(k);
      if (html[k] != '&') continue;
      bool ok = false;
      for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"})
        ok |= html.compare(k, std::strlen(e), e) == 0;
      if (!ok) return "a bad entity at " + std::to_string(k);
    }
    return {};
  };
  while (i < html.size()) {
    const size_t lt = html.find('<', i);
    if (auto p = check_text(i, lt == std::string::npos ? html.size() : lt); !p.empty()) return p;
    if (lt == std::string::npos) break;
    const size_t gt = html.find('>', lt);
    if (gt == std::string::npos) return "an unterminated tag";
    std::string tag = html.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.empty()) return "an empty tag";
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "</" + tag.substr(1) + "> closes " + (open.empty() ? "nothing" : open.back());
      open.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    const size_t name_end = tag.find(' ');
    const std::string name = tag.substr(0, name_end);
    // Attributes: name="value" pairs with no '<' or '"' inside the value.
    std::string rest = name_end == std::string::npos ? "" : tag.substr(name_end);
    size_t k = 0;
    while (k < rest.size()) {
      if (rest[k] == ' ') { ++k; continue; }
      const size_t eq = rest.find("=\"", k);
      if (eq == std::string::npos) return "an unquoted attribute in <" + name + ">";
      const size_t close = rest.find('"', eq + 2);
      if (close == std::string::npos) return "an unterminated attribute in <" + name + ">";
      if (rest.substr(eq + 2, close - eq - 2).find('<') != std::string::npos) return "'<' in an attribute";
      k = close + 1;
    }
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return {};
}

// The report must stand alone: no script, no external resource, no network address.
void xgb_expect_self_contained(const std::string& html) {
  for (const char* bad : {"<script", "http:", "https:", "src=", "url(", "@import", "<link", "<iframe", "<img"})
    EXPECT_EQ(html.find(bad), std::string::npos) << "the report holds " << bad;
  for (size_t p = html.find("href=\""); p != std::string::npos; p = html.find("href=\"", p + 1))
    EXPECT_EQ(html[p + 6], '#') << "a link that leaves the page at " << p;
}

std::string xgb_section(const std::string& html, const std::string& id) {
  const size_t start = html.find("<section id=\"" + id + "\">");
  if (start == std::string::npos) return {};
  return html.substr(start, html.find("</section>", start) - start);
}

// A binary:logistic run of 6 rounds, as the hook would save it with the rules configuration's
// collections: hyperparameters at step 0, the rest every round here.
void xgb_write_binary_run(const fs::path& dir) {
  const std::vector<double> labels{0, 0, 1, 1, 0, 1, 1, 0};
  std::vector<XgbRound> rounds;
  for (int64_t r = 0; r < 6; ++r) {
    XgbRound round{r, {}};
    if (r == 0) {
      round.tensors.push_back(xgb_string("hyperparameters/objective", "binary:logistic"));
      round.tensors.push_back(xgb_string("hyperparameters/max_depth", "3"));
      round.tensors.push_back(xgb_scalar("hyperparameters/eta", 0.3));
    }
    round.tensors.push_back(xgb_scalar("train-logloss", 0.6 - 0.05 * static_cast<double>(r)));
    round.tensors.push_back(xgb_scalar("validation-logloss", 0.65 - 0.04 * static_cast<double>(r)));
    round.tensors.push_back(xgb_scalar("validation-auc", 0.7 + 0.02 * static_cast<double>(r)));
    xgb_append(round.tensors, xgb_importance("weight", {{"f0", 0.5}, {"f1", 0.3}, {"age<30 & x", 0.2}}));
    xgb_append(round.tensors, xgb_importance("gain", {{"f0", 0.6}, {"f1", 0.4}}));
    xgb_append(round.tensors, xgb_importance("cover", {{"f0", 0.1}, {"f1", 0.9}}));
    xgb_append(round.tensors, xgb_full_tree(r, 2));
    if (r % 2 == 1 || r == 0) {
      // Early rounds predict everything as 0; the last one is the reference for the checks below.
      std::vector<double> p = r < 5 ? std::vector<double>(8, 0.2)
                                    : std::vector<double>{0.1, 0.4, 0.35, 0.8, 0.2, 0.9, 0.6, 0.7};
      round.tensors.push_back(TensorSave{"labels", labels, {}, format::ElementType::Float32});
      round.tensors.push_back(TensorSave{"predictions", p, {}, format::ElementType::Float32});
    }
    rounds.push_back(round);
  }
  xgb_write_trial(dir, rounds);
}

TEST(XgbCreateXgboostReport, WritesASelfContainedReportWithEverySection) {
  ScratchDir trial, out;
  xgb_write_binary_run(trial.path());
  auto s = evaluate_rule("CreateXgboostReport", trial.path(), {}, {.output_directory = out.path()}, "xgb-report");
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  EXPECT_TRUE(s.triggers.empty());
  const fs::path report = out.path() / "xgb-report.html";
  ASSERT_TRUE(fs::exists(report));
  for (const auto& e : fs::directory_iterator(out.path()))  // written through a temporary file, renamed
    EXPECT_EQ(e.path().filename(), "xgb-report.html");
  const std::string html = xgb_read(report);
  EXPECT_EQ(xgb_markup_problem(html), "");
  xgb_expect_self_contained(html);
  EXPECT_NE(html.find("<title>XGBoost training report: xgb-report</title>"), std::string::npos);

  for (const char* id : {"overview", "hyperparameters", "label-distribution", "loss", "feature-importance",
                         "confusion-matrix", "class-accuracy", "roc", "residuals", "error-per-label-bin"})
    EXPECT_FALSE(xgb_section(html, id).empty()) << "no section " << id;
  for (const char* id : {"label-distribution", "loss", "feature-importance", "confusion-matrix", "class-accuracy", "roc"})
    EXPECT_NE(xgb_section(html, id).find("<svg"), std::string::npos) << "no plot in " << id;

  const auto overview = xgb_section(html, "overview");
  EXPECT_NE(overview.find("binary classification (objective binary:logistic)"), std::string::npos) << overview;
  EXPECT_NE(overview.find("<td>0 to 5</td>"), std::string::npos);
  const auto hp = xgb_section(html, "hyperparameters");
  EXPECT_NE(hp.find("<tr><td>objective</td><td>binary:logistic</td></tr>"), std::string::npos) << hp;
  EXPECT_NE(hp.find("<tr><td>max_depth</td><td>3</td></tr>"), std::string::npos);
  EXPECT_NE(hp.find("<tr><td>eta</td><td>0.3</td></tr>"), std::string::npos);
  // Loss: three series over 6 steps; first, last, min, max of validation-logloss.
  const auto loss = xgb_section(html, "loss");
  EXPECT_NE(loss.find("<tr><td>validation-logloss</td><td>6</td><td>0.65</td><td>0.45</td><td>0.45</td><td>0.65</td></tr>"),
            std::string::npos) << loss;
  EXPECT_NE(loss.find("<tr><td>validation-auc</td><td>6</td><td>0.7</td><td>0.8</td>"), std::string::npos) << loss;
  EXPECT_EQ(std::count(loss.begin(), loss.end(), '\n') > 10, true);
  // Feature importance: one plot per type, names escaped.
  const auto fi = xgb_section(html, "feature-importance");
  for (const char* type : {"weight", "gain", "cover"})
    EXPECT_NE(fi.find(std::string("<h3 id=\"feature-importance-") + type + "\">"), std::string::npos) << type;
  EXPECT_NE(fi.find("age&lt;30 &amp; x"), std::string::npos);
  EXPECT_NE(fi.find(">0.9<"), std::string::npos);  // cover of f1
  // Confusion matrix at step 5 (threshold 0.5): [[3, 1], [1, 3]].
  const auto cm = xgb_section(html, "confusion-matrix");
  EXPECT_NE(cm.find("<tr><td>0</td><td>3</td><td>1</td></tr>"), std::string::npos) << cm;
  EXPECT_NE(cm.find("<tr><td>1</td><td>1</td><td>3</td></tr>"), std::string::npos) << cm;
  EXPECT_NE(cm.find("Accuracy: 75.0 % (6 of 8 labels)."), std::string::npos);
  EXPECT_NE(cm.find("predicted class 0: diagonal share 0.75"), std::string::npos);
  // Accuracy per class: at steps 0, 1, 3 everything is predicted 0 (class 0 right, class 1 wrong).
  const auto ca = xgb_section(html, "class-accuracy");
  EXPECT_NE(ca.find("<tr><td>0</td><td>1</td><td>0.75</td></tr>"), std::string::npos) << ca;
  EXPECT_NE(ca.find("<tr><td>1</td><td>0</td><td>0.75</td></tr>"), std::string::npos) << ca;
  // ROC: 13 of the 16 positive/negative pairs are ordered right.
  const auto roc = xgb_section(html, "roc");
  EXPECT_NE(roc.find("4 positive and 4 negative labels; area under the curve (AUC) 0.8125."), std::string::npos) << roc;
  // Regression-only sections say why they are empty.
  EXPECT_NE(xgb_section(html, "residuals").find("Not available: residuals need a regression task"), std::string::npos);
  EXPECT_NE(xgb_section(html, "error-per-label-bin").find("class=\"na\""), std::string::npos);
}

TEST(XgbCreateXgboostReport, RegressionRunGetsResidualsAndErrorPerLabelBin) {
  ScratchDir trial, out;
  xgb_write_trial(trial.path(),
                  {XgbRound{0, {xgb_string("hyperparameters/objective", "reg:squarederror"), xgb_scalar("train-rmse", 2),
                                TensorSave{"labels", {1, 2, 3, 4}, {}, format::ElementType::Float32},
                                TensorSave{"predictions", {1.5, 2, 2, 5}, {}, format::ElementType::Float32}}},
                   XgbRound{1, {xgb_scalar("train-rmse", 1)}}});
  auto s = evaluate_rule("CreateXgboostReport", trial.path(), {}, {.output_directory = out.path()}, "my report/1");
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  const fs::path report = out.path() / "my_report_1.html";
  ASSERT_TRUE(fs::exists(report));
  const std::string html = xgb_read(report);
  EXPECT_EQ(xgb_markup_problem(html), "");
  xgb_expect_self_contained(html);
  EXPECT_NE(html.find("<title>XGBoost training report: my report/1</title>"), std::string::npos);
  const auto res = xgb_section(html, "residuals");
  EXPECT_NE(res.find("<svg"), std::string::npos);
  // Residuals -0.5, 0, 1, -1.
  EXPECT_NE(res.find("<tr><td>Mean residual</td><td>-0.125</td></tr>"), std::string::npos) << res;
  EXPECT_NE(res.find("<tr><td>Mean absolute error</td><td>0.625</td></tr>"), std::string::npos);
  EXPECT_NE(res.find("<tr><td>Root mean squared error</td><td>0.75</td></tr>"), std::string::npos);
  // Labels 1..4 in 10 bins of 0.3: 1 in the first, 4 in the last (closed) bin.
  const auto bins = xgb_section(html, "error-per-label-bin");
  EXPECT_NE(bins.find("<tr><td>[1, 1.3)</td><td>1</td><td>0.5</td></tr>"), std::string::npos) << bins;
  EXPECT_NE(bins.find("<tr><td>[3.7, 4]</td><td>1</td><td>1</td></tr>"), std::string::npos) << bins;
  EXPECT_NE(bins.find("<tr><td>[1.3, 1.6)</td><td>0</td><td>n/a</td></tr>"), std::string::npos) << bins;
  EXPECT_NE(xgb_section(html, "confusion-matrix").find("Not available"), std::string::npos);
  EXPECT_NE(xgb_section(html, "roc").find("Not available"), std::string::npos);
  EXPECT_NE(xgb_section(html, "label-distribution").find("<svg"), std::string::npos);
  EXPECT_NE(xgb_section(html, "feature-importance").find("Not available"), std::string::npos);
}

TEST(XgbCreateXgboostReport, MulticlassScoresAreInferredWithoutAnObjective) {
  ScratchDir trial, out;
  // 4 labels, softprob scores over 3 classes: argmax [0, 2, 2, 1]; labels [0, 1, 2, 1].
  xgb_write_trial(trial.path(),
                  {XgbRound{0, {TensorSave{"labels", {0, 1, 2, 1}, {}, format::ElementType::Float32},
                                TensorSave{"predictions", {0.8, 0.1, 0.1, 0.2, 0.3, 0.5, 0.1, 0.1, 0.8, 0.1, 0.6, 0.3},
                                          {4, 3}, format::ElementType::Float32}}}});
  auto s = evaluate_rule("CreateXgboostReport", trial.path(), {}, {.output_directory = out.path()}, "multi");
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  const std::string html = xgb_read(out.path() / "multi.html");
  EXPECT_EQ(xgb_markup_problem(html), "");
  EXPECT_NE(html.find("multiclass classification (inferred: the predictions hold per-class scores)"), std::string::npos);
  const auto cm = xgb_section(html, "confusion-matrix");
  EXPECT_NE(cm.find("<tr><td>1</td><td>0</td><td>1</td><td>1</td></tr>"), std::string::npos) << cm;
  EXPECT_NE(cm.find("<tr><td>2</td><td>0</td><td>0</td><td>1</td></tr>"), std::string::npos) << cm;
  EXPECT_NE(xgb_section(html, "roc").find("Not available"), std::string::npos);
  EXPECT_NE(xgb_section(html, "hyperparameters").find("Not available"), std::string::npos);
}

TEST(XgbCreateXgboostReport, NoXgboostDataWritesNoReport) {
  ScratchDir trial, out;
  test::write_worker(trial.path(), "worker_0", 1, test::range_steps(0, 3), true);  // only tensor "w"
  auto s = evaluate_rule("CreateXgboostReport", trial.path(), {}, {.output_directory = out.path()}, "empty");
  EXPECT_EQ(s.status, RuleEvaluationStatus::NoIssuesFound) << seen(s);
  EXPECT_TRUE(fs::is_empty(out.path()));
}

TEST(XgbRules, DescriptorsCarryTheDocumentedParameters) {
  const auto& registry = test::builtin_registry();
  for (const char* name : {"TreeDepth", "FeatureImportanceOverweight", "CreateXgboostReport"}) {
    const auto* type = registry.find(name);
    ASSERT_NE(type, nullptr) << name;
    EXPECT_EQ(std::string(type->descriptor->id), std::string("vigil.builtin.") + name);
  }
  EXPECT_EQ(registry.find("CreateXgboostReport")->descriptor->param_count, 0u);
  const auto* fio = registry.find("FeatureImportanceOverweight")->descriptor;
  ASSERT_EQ(fio->param_count, 3u);
  EXPECT_STREQ(fio->params[2].name, "tensor_regex");
  EXPECT_STREQ(fio->params[2].default_text, ".*feature_importance/weight");
  EXPECT_STREQ(registry.find("TreeDepth")->descriptor->params[0].default_text, "4");
}

}  // namespace
}  // namespace vigil
