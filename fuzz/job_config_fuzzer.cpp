// The evaluator's job configuration (host/evaluate/job_config.*): the input is a job file's text.
#include <cstdint>
#include <string>
#include <string_view>

#include "evaluate/job_config.h"
#include "fuzz_check.h"

using namespace vigil::evaluate;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // With and without a --trial default: rules then must name their own base_trial.
  for (const std::string default_trial : {"/fuzz/trial", ""}) {
    auto job = parse_job_json(text, default_trial);
    if (!job) {
      FUZZ_CHECK(!job.error().message.empty());
      continue;
    }
    // A parsed job is a validated job.
    FUZZ_CHECK(validate_job(*job).has_value());
    FUZZ_CHECK(!job->rules.empty() && job->rules.size() <= kMaxRules);
    for (const auto& rule : job->rules) {
      FUZZ_CHECK(!rule.rule_to_invoke.empty() && !rule.base_trial.empty());
      FUZZ_CHECK(!rule.end_step || *rule.end_step > rule.start_step);
    }
  }
  return 0;
}
