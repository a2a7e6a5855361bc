// The "xgboost" family of built-in rules: TreeDepth, FeatureImportanceOverweight and
// CreateXgboostReport (shared/spec/builtin-rules.md §2.16, §2.17, §2.21). They read trials written
// by smdebug's XGBoost hook (smdebug-format.md §6.2). Built with the SDK only; registered in
// plugin.cpp.
#pragma once

#include <vigil/sdk.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "report.h"

namespace vigil::builtin::xgboost {

namespace sdk = vigil::sdk;

// ---------------------------------------------------------------------------------------------
// TreeDepth (§2.16)

class TreeDepth final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("depth", "4", "Fires when the depth of the tree saved at a step exceeds this.").min(0),
  };

  explicit TreeDepth(sdk::RuleContext ctx);
  sdk::Result<bool> invoke_at_step(vigil_step step) override;

 private:
  double depth_;
};

// ---------------------------------------------------------------------------------------------
// FeatureImportanceOverweight (§2.17)

class FeatureImportanceOverweight final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("threshold", "0.8", "Fires when the top `nfeatures` importances sum to more than this.")
          .range(0, 1),
      sdk::param_int("nfeatures", "3", "How many of the largest importances are summed.").min(1),
      sdk::param_string_list("tensor_regex", ".*feature_importance/weight",
                             "The importance scalars to read (comma-separated regexes, re.search)."),
  };

  explicit FeatureImportanceOverweight(sdk::RuleContext ctx);
  sdk::Result<bool> invoke_at_step(vigil_step step) override;

 private:
  double threshold_;
  int64_t nfeatures_;
  std::vector<std::string> regexes_;
};

// ---------------------------------------------------------------------------------------------
// CreateXgboostReport (§2.21)

class CreateXgboostReport final : public sdk::Rule {
 public:
  explicit CreateXgboostReport(sdk::RuleContext ctx);
  ~CreateXgboostReport() override;  // writes the final report if it changed since the last write
  sdk::Result<bool> invoke_at_step(vigil_step step) override;

  // The report's file name: the RuleConfigurationName made safe for a file name, or
  // "xgboost_report", plus ".html".
  static std::string file_name(const std::string& configuration_name);

 private:
  sdk::Result<std::filesystem::path> report_path() const;
  sdk::Result<void> write_report();
  // Classification: each class's share of right predictions at `step`, from the step's labels and
  // predictions in data_.
  void add_class_accuracy(vigil_step step);

  ReportData data_;
  bool dirty_ = false;
  std::chrono::steady_clock::time_point last_write_{};
};

}  // namespace vigil::builtin::xgboost
