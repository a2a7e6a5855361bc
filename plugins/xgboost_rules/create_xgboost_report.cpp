// CreateXgboostReport (builtin-rules.md §2.21): collects what smdebug's XGBoost hook saves and writes
// a self-contained HTML report next to the evaluator's status file. It never reports an issue.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <regex>
#include <system_error>
#include <unistd.h>

#include "svg.h"  // plugins/rule_support
#include "xgboost_rules.h"

namespace vigil::builtin::xgboost {

namespace {

using svg::format_number;

// The hook's collection regexes (smdebug-format.md §6.2), applied to names directly so that the
// report works whatever collections file the writer left. [a-zA-z] is smdebug's, quirk included.
constexpr const char* kHyperparametersRegex = "^hyperparameters/.*$";
constexpr const char* kMetricsRegex = "^[a-zA-z]+-[a-zA-z0-9]+$";
constexpr const char* kImportanceRegex = "^feature_importance/.*";

// While the trial is still being written, the report is rewritten at most this often.
constexpr std::chrono::seconds kRewriteInterval{10};

// The first worker's value of `name` at `step` as text: one number, numbers joined with ", ", or
// the strings of a string tensor.
sdk::Result<std::string> value_text(const sdk::Trial& trial, const std::string& name, vigil_step step) {
  const sdk::Tensor tensor = trial.tensor(name);
  auto view = tensor.value(step);
  if (!view) {
    if (view.error().code != VIGIL_E_TYPE_ERROR) return sdk::fail(std::move(view).error());
    VIGIL_TRY(const auto strings, tensor.strings(step));
    return fmt::format("{}", fmt::join(strings, ", "));
  }
  VIGIL_TRY(const auto values, view->to_doubles());
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + format_number(values[i]);
  return out;
}

// The first element of the first worker's value (metrics and importances are scalars).
sdk::Result<double> scalar(const sdk::Trial& trial, const std::string& name, vigil_step step) {
  VIGIL_TRY(auto view, trial.tensor(name).value(step));
  VIGIL_TRY(const auto values, view.to_doubles());
  if (values.empty()) return sdk::fail(sdk::Error::tensor_unavailable_for_step(name, step));
  return values.front();
}

// Skip errors (not saved at this step, only reductions, ...) leave a value out; others fail.
template <class T>
sdk::Result<bool> keep(sdk::Result<T>& r) {
  if (r) return true;
  if (r.error().is_skip()) return false;
  return sdk::fail(r.error());
}

}  // namespace

CreateXgboostReport::CreateXgboostReport(sdk::RuleContext ctx) : Rule(std::move(ctx)) {
  data_.configuration_name = instance_name();
}

CreateXgboostReport::~CreateXgboostReport() {
  if (!dirty_) return;
  try {
    if (auto r = write_report(); !r) log(VIGIL_LOG_ERROR, "the final report could not be written: {}", r.error().message);
  } catch (...) {
    // Nothing may escape a destructor; the report of the last successful write stays.
  }
}

std::string CreateXgboostReport::file_name(const std::string& configuration_name) {
  std::string name;
  for (char c : configuration_name)
    name.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_');
  if (name.empty() || name.find_first_not_of('.') == std::string::npos) name = "xgboost_report";
  return name + ".html";
}

sdk::Result<std::filesystem::path> CreateXgboostReport::report_path() const {
  // ABI 1.1 output_directory (the SDK has no wrapper yet): only when the host's table is long enough
  // to hold the slot. An ABI 1.0 host has none: the current directory.
  std::filesystem::path dir;
  const vigil_host_api* api = host().get();
  if (VIGIL_HAS_FIELD(api, vigil_host_api, output_directory) && api->output_directory) {
    if (const char* d = api->output_directory(session())) dir = d;
  }
  if (dir.empty()) {
    std::error_code ec;
    dir = std::filesystem::current_path(ec);
    if (ec) return sdk::fail(sdk::Error::make(VIGIL_E_IO, "no output directory: " + ec.message()));
  }
  return dir / file_name(instance_name());
}

sdk::Result<void> CreateXgboostReport::write_report() {
  VIGIL_TRY(const auto path, report_path());
  const std::string html = render_report(data_);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  // Written under a temporary name in the same folder, then renamed over the report, so that a
  // reader never sees a partial file.
  const auto tmp = path.parent_path() / fmt::format(".{}.{}.tmp", path.filename().string(), ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(html.data(), static_cast<std::streamsize>(html.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return sdk::fail(sdk::Error::make(VIGIL_E_IO, fmt::format("cannot write {}", tmp.string())));
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return sdk::fail(sdk::Error::make(VIGIL_E_IO, fmt::format("cannot rename the report to {}", path.string())));
  }
  dirty_ = false;
  last_write_ = std::chrono::steady_clock::now();
  log(VIGIL_LOG_DEBUG, "report written to {}", path.string());
  return {};
}

void CreateXgboostReport::add_class_accuracy(vigil_step step) {
  const TaskInfo task = detect_task(data_.hyperparameters, data_.labels, data_.predictions, data_.prediction_shape);
  if (task.task != Task::Binary && task.task != Task::Multiclass) return;
  const auto predicted = predicted_classes(task.task, data_.predictions, data_.prediction_shape, data_.labels.size());
  std::map<int64_t, std::pair<int64_t, int64_t>> per_class;  // class -> (right, labels)
  for (size_t i = 0; i < predicted.size(); ++i) {
    const double y = data_.labels[i];
    if (!std::isfinite(y) || y != std::trunc(y) || y < 0) continue;
    auto& [right, total] = per_class[static_cast<int64_t>(y)];
    right += predicted[i] == static_cast<int64_t>(y);
    ++total;
  }
  for (const auto& [cls, c] : per_class)
    data_.class_accuracy[cls].emplace_back(step, static_cast<double>(c.first) / static_cast<double>(c.second));
}

sdk::Result<bool> CreateXgboostReport::invoke_at_step(vigil_step step) {
  const sdk::Trial& trial = base_trial();
  bool found = false;

  VIGIL_TRY(const auto hyperparameters, trial.tensor_names({.step = step, .regex = {kHyperparametersRegex}}));
  for (const auto& name : hyperparameters) {
    auto text = value_text(trial, name, step);
    VIGIL_TRY(const bool ok, keep(text));
    if (!ok) continue;
    data_.hyperparameters[name.substr(std::string_view("hyperparameters/").size())] = *text;
    found = true;
  }

  VIGIL_TRY(const auto metrics, trial.tensor_names({.step = step, .regex = {kMetricsRegex}}));
  for (const auto& name : metrics) {
    auto v = scalar(trial, name, step);
    VIGIL_TRY(const bool ok, keep(v));
    if (!ok) continue;
    data_.metrics[name].emplace_back(step, *v);
    found = true;
  }

  VIGIL_TRY(const auto importances, trial.tensor_names({.step = step, .regex = {kImportanceRegex}}));
  std::map<std::string, std::map<std::string, double>> importance;
  for (const auto& name : importances) {
    // feature_importance/<type>/<feature>; a feature name may itself hold '/'.
    const auto first = name.find('/');
    const auto second = name.find('/', first + 1);
    if (second == std::string::npos) continue;
    auto v = scalar(trial, name, step);
    VIGIL_TRY(const bool ok, keep(v));
    if (!ok) continue;
    importance[name.substr(first + 1, second - first - 1)][name.substr(second + 1)] = *v;
  }
  if (!importance.empty()) {
    data_.importance = std::move(importance);
    data_.importance_step = step;
    found = true;
  }

  {
    // The views are released at the end of this block, before the report is written.
    auto labels_view = trial.tensor("labels").value(step);
    auto predictions_view = trial.tensor("predictions").value(step);
    VIGIL_TRY(const bool have_labels, keep(labels_view));
    VIGIL_TRY(const bool have_predictions, keep(predictions_view));
    if (have_labels && have_predictions) {
      VIGIL_TRY(data_.labels, labels_view->to_doubles());
      VIGIL_TRY(data_.predictions, predictions_view->to_doubles());
      const auto shape = predictions_view->shape();
      data_.prediction_shape.assign(shape.begin(), shape.end());
      data_.lp_step = step;
      found = true;
      add_class_accuracy(step);
    }
  }

  if (!found) return sdk::fail(sdk::Error::tensor_unavailable_for_step("labels", step));
  data_.steps.push_back(step);
  dirty_ = true;

  // The last saved step of an ended trial: write now. Otherwise at most every kRewriteInterval, and
  // once more when the rule ends (destructor).
  VIGIL_TRY(const bool ended, trial.training_ended());
  VIGIL_TRY(const vigil_step last, trial.last_complete_step());
  if ((ended && step >= last) || std::chrono::steady_clock::now() - last_write_ >= kRewriteInterval)
    VIGIL_TRY_VOID(write_report());
  return false;
}

}  // namespace vigil::builtin::xgboost
