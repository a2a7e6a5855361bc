// NLPSequenceRatio (builtin-rules.md §2.19): the share of given token ids in each input sequence
// tensor, per step.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "data_rules.h"

namespace vigil::builtin::data {

namespace {

// Evidence entries per step (the trigger itself does not depend on it).
constexpr size_t kMaxEvidence = 20;

double parse_number(const std::string& param, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isnan(v))
    throw sdk::SMDebugValueError(fmt::format("parameter {}: '{}' is not a number", param, text));
  return v;
}

}  // namespace

NLPSequenceRatio::NLPSequenceRatio(sdk::RuleContext ctx)
    : Rule(std::move(ctx)), regexes_(params().get_list("tensor_regex")) {
  if (regexes_.empty()) throw sdk::SMDebugValueError("parameter tensor_regex: give at least one regex");
  for (const auto& r : regexes_) (void)compile_param_regex("tensor_regex", r);
  const auto values = params().get_list("token_values");
  const auto thresholds = params().get_list("token_thresholds_percent");
  if (values.empty()) throw sdk::SMDebugValueError("parameter token_values: give at least one token id");
  if (thresholds.size() < values.size())
    throw sdk::SMDebugValueError(fmt::format(
        "token_thresholds_percent has {} value(s) for {} token value(s): give one threshold per token value",
        thresholds.size(), values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    const double t = parse_number("token_thresholds_percent", thresholds[i]);
    if (t < 0 || t > 100)
      throw sdk::SMDebugValueError(
          fmt::format("parameter token_thresholds_percent: {} is not a percentage between 0 and 100", thresholds[i]));
    tokens_.emplace_back(parse_number("token_values", values[i]), t);
  }
  for (size_t i = values.size(); i < thresholds.size(); ++i) (void)parse_number("token_thresholds_percent", thresholds[i]);
  if (thresholds.size() > values.size())
    log(VIGIL_LOG_WARNING, "token_thresholds_percent has {} values for {} token value(s): the extra ones are ignored",
        thresholds.size(), values.size());
}

sdk::Result<bool> NLPSequenceRatio::invoke_at_step(vigil_step step) {
  VIGIL_TRY(auto names, base_trial().tensor_names({.step = step, .regex = regexes_}));
  std::sort(names.begin(), names.end());
  bool judged = false;
  size_t reported = 0;
  bool fired = false;
  for (const std::string& name : names) {
    auto workers = read_workers(base_trial(), name, step);
    if (!workers) {
      if (workers.error().is_skip()) continue;
      return sdk::fail(std::move(workers).error());
    }
    judged = true;
    for (const WorkerValue& w : *workers) {
      for (const auto& [token, threshold] : tokens_) {
        const auto count = std::count(w.values.begin(), w.values.end(), token);  // x == v: NaN never counts
        // 0 elements: 0/0 = NaN, which is never above a threshold.
        const double percent = 100.0 * static_cast<double>(count) / static_cast<double>(w.values.size());
        if (!(percent > threshold)) continue;
        fired = true;
        if (reported++ >= kMaxEvidence) continue;
        VIGIL_TRY_VOID(report_evidence(sdk::JsonObject()
                                           .add("tensor", name)
                                           .add("worker", w.worker)
                                           .add("token_value", token)
                                           .add("token_count", static_cast<int64_t>(count))
                                           .add("elements", static_cast<int64_t>(w.values.size()))
                                           .add("percent", percent)
                                           .add("threshold_percent", threshold)
                                           .str()));
        log(VIGIL_LOG_INFO, "step {}: token {} is {}% of {} on {} (> {}%)", step, number_text(token), percent, name,
            w.worker, threshold);
      }
    }
  }
  if (!judged)
    return sdk::fail(sdk::Error::tensor_unavailable_for_step(names.empty() ? regexes_.front() : names.front(), step));
  return fired;
}

}  // namespace vigil::builtin::data
