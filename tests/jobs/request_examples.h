// CreateTrainingJob request pieces the jobs tests build on: the smallest valid request and a rule.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace vigil::jobs::test_requests {

inline nlohmann::json minimal() {
  return {{"TrainingJobName", "job-1"},
          {"RoleArn", "arn:aws:iam::111122223333:role/SageMakerExecRole"},
          {"OutputDataConfig", {{"S3OutputPath", "s3://bucket/out/"}}}};
}

inline nlohmann::json rule(std::string name) {
  return {{"RuleConfigurationName", std::move(name)},
          {"RuleEvaluatorImage", "895741380848.dkr.ecr.us-west-2.amazonaws.com/sagemaker-debugger-rules:latest"},
          {"RuleParameters", {{"rule_to_invoke", "VanishingGradient"}}}};
}

}  // namespace vigil::jobs::test_requests
