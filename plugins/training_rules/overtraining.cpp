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
      delta_(params().get_double("delta")) {}

Result<bool> Overtraining::invoke_at_step(vigil_step step) {
  VIGIL_TRY(const auto mm, base_trial().mode_modestep(step));
  if (!mm) return false;
  const vigil_mode mode = mm->first;
  const bool training = mode == VIGIL_MODE_TRAIN || mode == VIGIL_MODE_GLOBAL;
  if (!training && mode != VIGIL_MODE_EVAL) return false;  // PREDICT

  // Update the counters of the losses saved at this step.
  VIGIL_TRY(const auto names, base_trial().collection_tensor_names("losses"));
  std::map<std::pair<std::string, std::string>, double> read_now;
  for (const std::string& name : names) {
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step, VIGIL_MODE_GLOBAL));
    for (const std::string& worker : workers) {
      VIGIL_TRY(const auto value, read_scalar(tensor, step, VIGIL_MODE_GLOBAL, worker));
      if (!value) continue;
      State& st = state_[{name, worker}];
      Track& t = training ? st.train : st.validation;
      if (!t.started) {
        t.started = true;
        t.best = std::numeric_limits<double>::infinity();
      }
      if (*value < t.best - delta_) {  // NaN is never an improvement
        t.best = *value;
        t.counter = 0;
      } else {
        ++t.counter;
      }
      read_now[{name, worker}] = *value;
    }
  }
  if (read_now.empty()) return false;  // no loss saved at this step: no verdict

  std::vector<std::string> fired;
  for (const auto& [key, st] : state_) {
    const auto check = [&](const Track& t, const char* which, int64_t patience, bool is_train) {
      if (!t.started || t.counter < patience) return;
      sdk::JsonObject o;
      o.add("tensor", key.first).add("worker", key.second).add("mode", which);
      o.add("counter", t.counter).add("patience", patience).add("best", t.best).add("delta", delta_);
      if (auto it = read_now.find(key); it != read_now.end() && is_train == training) o.add("value", it->second);
      fired.push_back(o.str());
    };
    check(st.train, "TRAIN", patience_train_, true);
    check(st.validation, "EVAL", patience_validation_, false);
  }
  if (fired.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(sdk::JsonObject().add("step", step).add_raw("no_improvement", json_array(fired)).str()));
  return true;
}

}  // namespace vigil::training
