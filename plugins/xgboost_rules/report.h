// CreateXgboostReport's model: what the rule collects from the trial and the self-contained HTML page
// (inline SVG plots, no script, no external resource) it renders; the analyses are in
// report_statistics.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "report_statistics.h"

namespace vigil::builtin::xgboost {

// What the rule has collected so far.
struct ReportData {
  std::string configuration_name;
  std::vector<int64_t> steps;  // steps with any data, ascending
  // hyperparameters/<name> -> value as text (the latest saved).
  std::map<std::string, std::string> hyperparameters;
  // metric name (train-rmse, validation-auc, ...) -> (step, value).
  std::map<std::string, std::vector<std::pair<int64_t, double>>> metrics;
  // feature_importance/<type>/<feature>: type -> feature -> value, at importance_step (the latest).
  int64_t importance_step = -1;
  std::map<std::string, std::map<std::string, double>> importance;
  // The latest step's validation labels and predictions.
  int64_t lp_step = -1;
  std::vector<double> labels;
  std::vector<double> predictions;
  std::vector<int64_t> prediction_shape;
  // Classification: class -> (step, share of that class's labels predicted right).
  std::map<int64_t, std::vector<std::pair<int64_t, double>>> class_accuracy;
};

// The whole page.
std::string render_report(const ReportData& data);

}  // namespace vigil::builtin::xgboost
