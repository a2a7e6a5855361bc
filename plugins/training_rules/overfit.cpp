#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "training_support.h"
#include "training_rules.h"

namespace vigil::training {

Overfit::Overfit(sdk::RuleContext ctx)
    : Rule(std::move(ctx)),
      regexes_(params().get_list_or("tensor_regex", {})),
      patience_(params().get_int("patience")),
      ratio_threshold_(params().get_double("ratio_threshold")),
      require_validation_rise_(params().get_bool("require_validation_rise")) {}

Result<bool> Overfit::invoke_at_step(vigil_step step) {
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

  const Selection selection = regexes_.empty() ? Selection{.collections = {"losses"}} : Selection{.regexes = regexes_};
  VIGIL_TRY(const auto names, selected_tensors(base_trial(), selection));
  bool read_any = false;
  int checks = 0;
  std::vector<std::string> fired;
  for (const std::string& name : names) {
    const sdk::Tensor tensor = base_trial().tensor(name);
    VIGIL_TRY(const auto workers, workers_at(tensor, step, VIGIL_MODE_GLOBAL));
    for (const std::string& worker : workers) {
      VIGIL_TRY(const auto value, read_scalar(tensor, step, VIGIL_MODE_GLOBAL, worker));
      if (!value) continue;
      read_any = true;
      State& st = state_[{name, worker}];
      if (training) {
        st.train_sum += *value;
        ++st.train_count;
        continue;
      }
      // An EVAL step is a check against the training values saved since the previous check.
      if (st.train_count > 0) {
        st.last_train_mean = st.train_sum / static_cast<double>(st.train_count);
        st.last_train_count = st.train_count;
        st.train_sum = 0;
        st.train_count = 0;
      }
      const double best_val = st.best_val;
      if (!std::isnan(*value) && *value < st.best_val) st.best_val = *value;
      if (!st.last_train_mean) continue;  // no training loss yet: no check
      ++checks;
      const double mean_train = *st.last_train_mean;
      const double ratio = (*value - mean_train) / mean_train;
      const bool rising = !require_validation_rise_ || *value > best_val;
      if (ratio > ratio_threshold_ && rising) ++st.counter;
      else st.counter = 0;
      log(VIGIL_LOG_DEBUG, "step {}: {} on {}: val {} vs train {} -> ratio {} (best val {}, counter {})", step, name,
          worker, *value, mean_train, ratio, best_val, st.counter);
      if (st.counter >= patience_) {
        sdk::JsonObject o;
        o.add("tensor", name).add("worker", worker).add("val", *value).add("mean_train", mean_train);
        o.add("train_values", st.last_train_count).add("ratio", ratio).add("ratio_threshold", ratio_threshold_);
        if (require_validation_rise_) o.add("best_val", best_val);
        o.add("counter", st.counter).add("patience", patience_);
        fired.push_back(o.str());
      }
    }
  }
  if (checks == 0) {
    if (!read_any) not_judged("no loss saved at this step");
    else if (training) not_judged("TRAIN step: the checks are at EVAL steps");
    else not_judged("no training loss before this evaluation");
    return false;
  }
  if (fired.empty()) return false;
  VIGIL_TRY_VOID(report_evidence(sdk::JsonObject().add("step", step).add_raw("losses", json_array(fired)).str()));
  return true;
}

}  // namespace vigil::training
