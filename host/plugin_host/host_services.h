// The host services table (vigil_host_api) that adapts the trial API to the C ABI, and the
// host-side objects behind the ABI's opaque handles (vigil_trial, vigil_session).
#pragma once

#include <vigil/vigil.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/error.h"
#include "plugin_host/step_value_cache.h"
#include "trial/trial.h"

// The opaque ABI handles are defined here, on the host side only.
// A rule instance's handle on one trial: each rule gets its own handles, pointing at the trial
// shared by every rule that reads it and at the rule's session.
struct vigil_trial {
  std::shared_ptr<vigil::Trial> trial;
  vigil_session* session = nullptr;
};

namespace vigil::plugin_host {

struct ProfilerSource;  // profiler_extension.h

// The DLPack dtype of an element type (kDLOpaqueHandle for strings), as tensor views carry it.
[[nodiscard]] DLDataType dl_type(ElementType t);

// Copies a host Error into a caller's vigil_error, filling only what its struct_size allows
// (sdk::write_error_record).
void fill_abi_error(const Error& e, vigil_error* err);
// The reverse, for errors a plugin reports (sdk::Error::from_abi).
[[nodiscard]] Error error_from_abi(vigil_status status, const vigil_error& err);

}  // namespace vigil::plugin_host

// One per rule instance: what host functions called on the rule's behalf need to know.
struct vigil_session {
  std::string rule_name;                              // the RuleConfigurationName
  uint16_t plugin_abi_minor = 0;                      // the ABI minor the rule's plugin was built against
  std::string output_directory;                       // where the rule may write reports
  std::function<void(vigil_log_level, const std::string&)> log;
  std::stop_token stop;                               // requested when the evaluation is being stopped
  std::shared_ptr<vigil::plugin_host::StepValueCache> cache;  // may be null
  // Views handed out and not yet released; shared with the views so a late release stays safe.
  std::shared_ptr<std::atomic<int64_t>> outstanding_views = std::make_shared<std::atomic<int64_t>>(0);
  std::mutex evidence_mu;                             // guards evidence and the not_judged mark
  std::vector<std::string> evidence;                  // JSON objects reported at the current step
  bool not_judged = false;                            // the current call said it did not judge (ABI 1.2)
  std::string not_judged_reason;
  // A profiler rule's data (the extension vigil.profiler/1); null for every other rule.
  std::shared_ptr<vigil::plugin_host::ProfilerSource> profiler;
};

namespace vigil::plugin_host {

// The table handed to plugins. Static, valid for the life of the process.
const vigil_host_api* host_api();

}  // namespace vigil::plugin_host
