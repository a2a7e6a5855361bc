#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "training_support.h"
#include "training_rules.h"

namespace vigil::training {

Overtraining::Overtraining(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      patience_train_(params().get_int("patience_train")),
      patience_validation_(params().get_int("patience_validation")),
      delta_(params().get_double("delta")),
      relative_delta_(params().get_bool("relative_delta")),
      train_window_(static_cast<size_t>(params().get_int("train_window"))) {}

bool Overtraining::update(Track& t, double v) const {
  if (!t.started) {
    t.started = true;
    t.best = std::numeric_limits<double>::infinity();
  }
  // The first finite value always improves on +inf (inf - inf would be NaN in the relative form).
  const double bar = std::isinf(t.best) ? t.best : t.best - (relative_delta_ ? delta_ * std::abs(t.best) : delta_);
  if (v < bar) {  // NaN is never an improvement
    t.best = v;
    t.counter = 0;
    return true;
  }
  ++t.counter;
  return false;
}

Result<bool> Overtraining::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto mm, base_trial().mode_modestep(step));
  if (!mm) {
    not_judged("no mode for this step");
    return false;
  }
  const vigil_mode mode = mm->first;
  const bool training = mode == VIGIL_MODE_TRAIN || mode == VIGIL_MODE_GLOBAL;
  if (!training && mode != VIGIL_MODE_EVAL) {
    not_judged("PREDICT step");
    return false;
  }

  // Update the counters of the losses saved at this step.
  VIGIL_TRY(const auto names, base_trial().collection_tensor_names("losses"));
  std::map<std::pair<std::string, std::string>, double> compared_now;
  bool read_any = false;
  for (const std::string& name : names) {
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step, VIGIL_MODE_GLOBAL));
    for (const std::string& worker : workers) {
      VIGIL_TRY(const auto value, read_scalar(tensor, step, VIGIL_MODE_GLOBAL, worker));
      if (!value) continue;
      read_any = true;
      State& st = state_[{name, worker}];
      double compared = *value;
      if (training && train_window_ > 1) {
        st.train_recent.push_back(*value);
        if (st.train_recent.size() > train_window_) st.train_recent.pop_front();
        if (st.train_recent.size() < train_window_) continue;  // the window is not full yet
        double sum = 0;
        for (double v : st.train_recent) sum += v;
        compared = sum / static_cast<double>(train_window_);
      }
      update(training ? st.train : st.validation, compared);
      compared_now[{name, worker}] = compared;
    }
  }
  if (!read_any) {
    not_judged("no loss saved at this step");
    return false;
  }

  std::vector<std::string> fired;
  bool any_started = false;
  for (const auto& [key, st] : state_) {
    any_started = any_started || st.train.started || st.validation.started;
    const auto check = [&](const Track& t, const char* which, int64_t patience, bool is_train) {
      if (!t.started || t.counter < patience) return;
      sdk::JsonObject o;
      o.add("tensor", key.first).add("worker", key.second).add("mode", which);
      o.add("counter", t.counter).add("patience", patience).add("best", t.best).add("delta", delta_);
      const auto now = compared_now.find(key);
      if (now != compared_now.end() && is_train == training) o.add("value", now->second);
      if (is_train && train_window_ > 1) o.add("train_window", static_cast<int64_t>(train_window_));
      fired.push_back(o.str());
    };
    check(st.train, "TRAIN", patience_train_, true);
    check(st.validation, "EVAL", patience_validation_, false);
  }
  if (!any_started) {
    not_judged("fewer than train_window TRAIN losses and no EVAL loss yet");
    return false;
  }
  if (fired.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(sdk::JsonObject().add("step", step).add_raw("no_improvement", json_array(fired)).str()));
  return true;
}

}  // namespace vigil::training
