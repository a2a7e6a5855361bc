#include "evaluate/rule_instance.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <utility>

namespace vigil::evaluate {

namespace {

// The statuses the ABI defines (status.h's list); any other fails the rule.
bool known_status(vigil_status s) { return vigil_status_name(s) != nullptr; }

[[nodiscard]] Error plugin_failure(std::string message) {
  return Error{.code = ErrorCode::PluginFailure, .message = std::move(message)};
}

struct RequiredTensor {
  uint32_t trial_index;
  std::string name;
  bool is_regex;
  std::vector<int64_t> steps;
};

[[nodiscard]] vigil_status add_required(void* ctx, uint32_t trial_index, const char* name, bool is_regex, const vigil_step* steps,
                          size_t count) {
  if (!name || (count > 0 && !steps)) return VIGIL_E_INVALID_ARGUMENT;
  try {
    static_cast<std::vector<RequiredTensor>*>(ctx)->push_back(
        RequiredTensor{trial_index, name, is_regex, std::vector<int64_t>(steps, steps + count)});
  } catch (...) {
    return VIGIL_E_OUT_OF_MEMORY;
  }
  return VIGIL_OK;
}

// "ZeroDivisionError: division by zero": a Python traceback's last line already names its class.
bool starts_with_exception_class(const std::string& message) {
  const auto colon = message.find(": ");
  if (colon == std::string::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i)
    if (!std::isalnum(static_cast<unsigned char>(message[i])) && message[i] != '_' && message[i] != '.') return false;
  return true;
}

}  // namespace

std::string InvokeOutcome::details() const {
  if (status == VIGIL_E_PLUGIN_FAILURE && starts_with_exception_class(error.message)) return error.message;
  std::string cls;
  if (const char* c = vigil_status_smdebug_class(status)) cls = c;
  else if (status == VIGIL_E_PLUGIN_FAILURE) cls = "RuleError";
  else cls = fmt::format("Status{}", status);
  return cls + ": " + error.message;
}

namespace {

// What vigil_prepare_context and vigil_rule_context both carry: the host, the rule's parameters and its
// configuration name (the strings stay owned by the caller for the call).
template <class Context>
void fill_rule_parameters(Context& ctx, const plugin_host::BoundParams& params, const char* instance_name) {
  ctx.struct_size = sizeof(ctx);
  ctx.host = plugin_host::host_api();
  ctx.params = params.data();
  ctx.param_count = params.size();
  ctx.instance_name = instance_name;
  ctx.extra_param_names = params.extra_names();
  ctx.extra_param_values = params.extra_values();
  ctx.extra_param_count = params.extra_count();
}

}  // namespace

Result<void> prepare_rule(const plugin_host::RuleType& type, const plugin_host::BoundParams& params,
                          const std::string& configuration_name) {
  if (!type.preparer) return {};
  vigil_prepare_context ctx{};
  fill_rule_parameters(ctx, params, configuration_name.c_str());
  vigil_error err{};
  err.struct_size = sizeof(err);
  vigil_status st;
  try {
    st = type.preparer->prepare(type.preparer, type.descriptor->id, &ctx, &err);
  } catch (...) {
    return fail(plugin_failure("the plugin threw a C++ exception across the C ABI while preparing the rule"));
  }
  if (st != VIGIL_OK) return fail(plugin_host::error_from_abi(st, err));
  return {};
}

Result<std::unique_ptr<RuleInstance>> RuleInstance::create(const plugin_host::RuleType& type,
                                                           const plugin_host::BoundParams& params,
                                                           const std::string& configuration_name,
                                                           std::vector<std::shared_ptr<Trial>> trials,
                                                           std::shared_ptr<plugin_host::StepValueCache> cache,
                                                           std::stop_token stop, RuleLog log,
                                                           std::filesystem::path output_directory,
                                                           std::shared_ptr<plugin_host::ProfilerSource> profiler) {
  std::unique_ptr<RuleInstance> r(new RuleInstance());
  r->type_ = type;
  r->session_ = std::make_unique<vigil_session>();
  r->session_->rule_name = configuration_name;
  r->session_->plugin_abi_minor = type.abi_minor;
  r->session_->stop = stop;
  r->session_->cache = std::move(cache);
  r->session_->log = std::move(log);
  r->session_->profiler = std::move(profiler);
  std::error_code ec;
  if (output_directory.empty()) output_directory = std::filesystem::current_path(ec);
  r->session_->output_directory = std::filesystem::absolute(output_directory, ec).string();
  for (const auto& t : trials) r->handles_.push_back(vigil_trial{t, r->session_.get()});
  for (auto& h : r->handles_) r->handle_ptrs_.push_back(&h);

  vigil_rule_context ctx{};
  fill_rule_parameters(ctx, params, r->session_->rule_name.c_str());
  ctx.session = r->session_.get();
  ctx.trials = r->handle_ptrs_.data();
  ctx.trial_count = uint32_t(r->handle_ptrs_.size());
  vigil_error err{};
  err.struct_size = sizeof(err);
  vigil_status st;
  try {
    st = type.factory->create(type.factory, type.descriptor->id, &ctx, &r->rule_, &err);
  } catch (...) {
    r->rule_ = nullptr;
    return fail(plugin_failure("the plugin threw a C++ exception across the C ABI while creating the rule"));
  }
  if (st != VIGIL_OK || !r->rule_) {
    r->rule_ = nullptr;
    if (st == VIGIL_OK) return fail(plugin_failure("create() returned no rule"));
    return fail(plugin_host::error_from_abi(st, err));
  }
  if (!VIGIL_HAS_FIELD(r->rule_, vigil_rule, invoke_at_step) || !r->rule_->invoke_at_step || !r->rule_->destroy) {
    r->rule_ = nullptr;  // not safe to call anything on it
    return fail(plugin_failure("the plugin returned an incomplete rule (no invoke_at_step or destroy)"));
  }
  return r;
}

RuleInstance::~RuleInstance() {
  if (!rule_) return;
  try {
    rule_->destroy(rule_);
  } catch (...) {
    // A destroy that throws across the ABI cannot be helped; the verdict stands.
  }
}

InvokeOutcome RuleInstance::prefetch(int64_t step) {
  InvokeOutcome out;
  if (!rule_->required_tensors) return out;
  std::vector<RequiredTensor> wanted;
  vigil_required_sink sink{&wanted, add_required};
  vigil_error err{};
  err.struct_size = sizeof(err);
  try {
    out.status = rule_->required_tensors(rule_, step, &sink, &err);
  } catch (...) {
    out.status = VIGIL_E_PLUGIN_FAILURE;
    out.error = plugin_failure("the plugin threw a C++ exception across the C ABI in required_tensors");
    return out;
  }
  if (!known_status(out.status)) {
    out.error = plugin_failure(fmt::format("required_tensors returned unknown status {}", out.status));
    out.status = VIGIL_E_PLUGIN_FAILURE;
    return out;
  }
  if (out.status != VIGIL_OK) {
    out.error = plugin_host::error_from_abi(out.status, err);
    return out;
  }
  // Read each required value once into the step's cache; the rule's own reads then hit it.
  auto* cache = session_->cache.get();
  if (!cache) return out;
  for (const auto& req : wanted) {
    if (req.trial_index >= handles_.size()) continue;
    Trial& t = *handles_[req.trial_index].trial;
    std::vector<std::string> names;
    if (req.is_regex) names = t.tensor_names(TensorNameQuery{.regex = {req.name}}).value_or(std::vector<std::string>{});
    else names.push_back(req.name);
    for (const auto& name : names)
      for (int64_t s : req.steps.empty() ? std::vector<int64_t>{step} : req.steps) {
        auto value = t.value(name, s);
        if (value) cache->put(cache->key(&t, name, s, Mode::Global), std::move(*value));
      }
  }
  return out;
}

// One call into the rule (`call(&met, &err)` returns its status), contained: an exception thrown
// across the ABI or a tensor view kept past the call fails it, and the outcome is mapped from the
// status. `fn` names the slot and `at` the step for the messages ("" when none).
template <class Call>
InvokeOutcome RuleInstance::contained_call(std::string_view fn, const std::string& at, Call&& call) {
  InvokeOutcome out;
  vigil_error err{};
  err.struct_size = sizeof(err);
  bool met = false;
  const int64_t views_before = session_->outstanding_views->load();
  try {
    out.status = call(&met, &err);
  } catch (...) {
    out.status = VIGIL_E_PLUGIN_FAILURE;
    const std::string where = at.empty() ? " in " + std::string(fn) : at;
    out.error = plugin_failure("the plugin threw a C++ exception across the C ABI" + where);
    return out;
  }
  if (const int64_t leaked = session_->outstanding_views->load() - views_before; leaked > 0) {
    out.status = VIGIL_E_PLUGIN_FAILURE;
    out.error = plugin_failure(fmt::format(
        "the rule kept {} tensor view(s) past {}{} (views must be released before the call returns)", leaked, fn, at));
    return out;
  }
  finish_call(out, met, err, fmt::format("{} returned unknown status {{}}{}", fn, at));
  return out;
}

InvokeOutcome RuleInstance::invoke(int64_t step) {
  return contained_call("invoke_at_step", fmt::format(" at step {}", step), [&](bool* met, vigil_error* err) {
    return rule_->invoke_at_step(rule_, step, met, err);
  });
}

bool RuleInstance::takes_ticks() const {
  return VIGIL_HAS_FIELD(rule_, vigil_rule, invoke_at_time) && rule_->invoke_at_time;
}

InvokeOutcome RuleInstance::invoke_at_time(double wall_time, int64_t last_step) {
  return contained_call("invoke_at_time", "", [&](bool* met, vigil_error* err) {
    return rule_->invoke_at_time(rule_, wall_time, last_step, met, err);
  });
}

void RuleInstance::finish_call(InvokeOutcome& out, bool met, const vigil_error& err, std::string_view what) {
  {
    std::lock_guard lock(session_->evidence_mu);
    out.evidence.swap(session_->evidence);
    out.not_judged = std::exchange(session_->not_judged, false);
    out.not_judged_reason = std::exchange(session_->not_judged_reason, {});
  }
  if (!known_status(out.status)) {
    out.error = plugin_failure(fmt::vformat(what, fmt::make_format_args(out.status)));
    out.status = VIGIL_E_PLUGIN_FAILURE;
    return;
  }
  if (out.status == VIGIL_OK) {
    out.condition_met = met;
    if (met) out.not_judged = false;  // a verdict was reached after all
    return;
  }
  out.error = plugin_host::error_from_abi(out.status, err);
  if (out.status == VIGIL_S_RULE_CONDITION_MET) {
    out.condition_met = true;
    out.not_judged = false;
    out.end_of_rule = (err.flags & VIGIL_ERRF_END_OF_RULE) != 0;
  }
}

}  // namespace vigil::evaluate
