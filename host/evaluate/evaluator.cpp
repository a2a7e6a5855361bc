#include "evaluate/evaluator.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "plugins/host_services.h"
#include "plugins/param_values.h"
#include "trial/trial.h"

namespace vigil::evaluate {

namespace fs = std::filesystem;
using plugins::BoundParams;
using plugins::RuleType;

namespace {

struct RuleInstance {
  size_t index = 0;  // in the job and on the status board
  RuleConfig config;
  RuleType type;
  BoundParams params;
  std::unique_ptr<vigil_session> session;
  std::vector<vigil_trial> handles;  // [0] base trial, then other trials
  std::vector<vigil_trial*> handle_ptrs;
  vigil_rule* rule = nullptr;
  bool finished = false;
  bool fired = false;
};

// The statuses the ABI defines (others are unknown and fail the rule).
bool known_status(vigil_status s) { return (s >= 0 && s <= 11) || (s >= 100 && s <= 112); }

std::string class_of(vigil_status s) {
  if (const char* c = vigil_status_smdebug_class(s)) return c;
  switch (s) {
    case VIGIL_E_OUT_OF_MEMORY: return "MemoryError";
    case VIGIL_E_VERSION_MISMATCH: return "VersionMismatch";
    case VIGIL_E_CANCELLED: return "Cancelled";
    case VIGIL_E_TIMEOUT: return "Timeout";
    case VIGIL_E_PLUGIN_FAILURE: return "RuleError";
    default: return fmt::format("Status{}", s);
  }
}

std::string abi_message(const vigil_error& err) { return std::string(err.message, strnlen(err.message, sizeof(err.message))); }

// How SageMaker words an Error status caused by the user's data or configuration.
std::string client_error(const Error& e) {
  if (e.code == ErrorCode::MissingCollectionFiles)
    return "ClientError: No debugging data was saved by the training job. Check that the debugger hook was configured "
           "correctly before starting the training job. Exception: " + e.message;
  return fmt::format("ClientError: {}: {}", e.class_name(), e.message);
}

}  // namespace

struct Evaluator::Impl {
  EvaluatorOptions options;
  std::vector<std::unique_ptr<RuleInstance>> rules;
  std::unique_ptr<StatusBoard> board;
  std::mutex trials_mu;
  std::map<std::string, std::shared_ptr<Trial>> trials;  // by path, shared by every rule reading it

  Result<std::shared_ptr<Trial>> open_trial(const std::string& path, std::stop_token stop);
  void run_group(const std::string& base_path, std::vector<RuleInstance*> group, std::stop_token stop);
  bool create_instance(RuleInstance& r, const std::shared_ptr<plugins::StepValueCache>& cache,
                       const std::vector<std::shared_ptr<Trial>>& trials, std::stop_token stop);
  void invoke(RuleInstance& r, int64_t step);
  void prefetch(RuleInstance& r, Trial& base, const std::vector<std::shared_ptr<Trial>>& trials, int64_t step,
                plugins::StepValueCache& cache);
  void finish(RuleInstance& r) {
    if (r.finished) return;
    r.finished = true;
    if (!r.fired) board->set(r.index, RuleEvaluationStatus::NoIssuesFound);
  }
  void fail_rule(RuleInstance& r, std::string details) {
    if (r.finished) return;
    r.finished = true;
    board->set(r.index, RuleEvaluationStatus::Error, std::move(details));
  }
  void destroy(RuleInstance& r) {
    if (!r.rule) return;
    try {
      r.rule->destroy(r.rule);
    } catch (...) {
    }
    r.rule = nullptr;
  }
};

Evaluator::Evaluator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Evaluator::~Evaluator() {
  for (auto& r : impl_->rules) impl_->destroy(*r);
}

Result<std::unique_ptr<Evaluator>> Evaluator::create(const plugins::PluginRegistry& registry, JobConfig job,
                                                     EvaluatorOptions options) {
  if (auto v = validate_job(job); !v) return fail(v.error());
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  std::vector<RuleStatus> initial;
  for (size_t i = 0; i < job.rules.size(); ++i) {
    auto& config = job.rules[i];
    const std::string field = fmt::format("DebugRuleConfigurations[{}].RuleParameters", i);
    const RuleType* type = registry.find(config.rule_to_invoke);
    if (!type) {
      std::string known;
      for (const auto& r : registry.rules()) known += (known.empty() ? "" : ", ") + std::string(r.descriptor->name);
      return fail(Error::invalid_argument(fmt::format("{}.rule_to_invoke: unknown rule '{}' (loaded rules: {})", field,
                                                      config.rule_to_invoke, known.empty() ? "none" : known)));
    }
    if (!config.other_trials.empty() && !(type->descriptor->flags & VIGIL_RULEF_MULTI_TRIAL))
      return fail(Error::invalid_argument(
          fmt::format("{}.other_trials: rule {} reads only its base trial", field, type->descriptor->name)));
    auto params = BoundParams::bind(*type->descriptor, config.parameters, config.configuration_name);
    if (!params) return fail(params.error());
    for (const auto& path : [&] {
           std::vector<std::string> all{config.base_trial};
           all.insert(all.end(), config.other_trials.begin(), config.other_trials.end());
           return all;
         }()) {
      std::error_code ec;
      if (!fs::is_directory(path, ec))
        return fail(Error::invalid_argument(
            fmt::format("DebugRuleConfigurations[{}]: trial '{}' is not a directory", i, path)));
    }
    auto r = std::make_unique<RuleInstance>();
    r->index = i;
    r->type = *type;
    r->params = std::move(*params);
    r->config = std::move(config);
    initial.push_back(RuleStatus{.configuration_name = r->config.configuration_name,
                                 .rule_name = type->descriptor->name,
                                 .status = RuleEvaluationStatus::InProgress});
    impl->rules.push_back(std::move(r));
  }
  impl->board = std::make_unique<StatusBoard>(std::move(initial), impl->options.status_file, impl->options.on_status);
  if (auto w = impl->board->flush(); !w) return fail(w.error());
  return std::unique_ptr<Evaluator>(new Evaluator(std::move(impl)));
}

std::vector<RuleStatus> Evaluator::statuses() const { return impl_->board->all(); }

void Evaluator::run(std::stop_token stop) {
  for (auto& r : impl_->rules)
    if (impl_->options.on_status) impl_->options.on_status(impl_->board->get(r->index));
  std::map<std::string, std::vector<RuleInstance*>> groups;
  for (auto& r : impl_->rules) groups[r->config.base_trial].push_back(r.get());
  {
    std::vector<std::jthread> threads;
    for (auto& [path, group] : groups)
      threads.emplace_back([this, path, group, stop] { impl_->run_group(path, group, stop); });
  }
  for (auto& r : impl_->rules) impl_->destroy(*r);
  if (stop.stop_requested())
    for (auto& r : impl_->rules)
      if (impl_->board->get(r->index).status == RuleEvaluationStatus::Stopping)
        impl_->board->set(r->index, RuleEvaluationStatus::Stopped);
  (void)impl_->board->flush();
}

Result<std::shared_ptr<Trial>> Evaluator::Impl::open_trial(const std::string& path, std::stop_token stop) {
  {
    std::lock_guard lock(trials_mu);
    if (auto it = trials.find(path); it != trials.end()) return it->second;
  }
  TrialOptions topts = trial_options_from_env();
  topts.poll_interval = options.poll_interval;
  // Wait for the collection files in short slices so that a stop request is seen promptly.
  topts.collections_timeout = options.follow ? std::chrono::milliseconds(200) : std::chrono::milliseconds(0);
  const auto started = std::chrono::steady_clock::now();
  while (true) {
    auto t = Trial::open(path, topts);
    if (t) {
      if (!options.follow) (*t)->assume_training_ended();
      std::lock_guard lock(trials_mu);
      return trials.try_emplace(path, *t).first->second;
    }
    if (t.error().code != ErrorCode::Timeout || !options.follow) return fail(t.error());
    if (stop.stop_requested()) return fail(Error{.code = ErrorCode::Cancelled, .message = "stopped"});
    if (options.idle_timeout && std::chrono::steady_clock::now() - started >= *options.idle_timeout)
      return fail(t.error());
  }
}

bool Evaluator::Impl::create_instance(RuleInstance& r, const std::shared_ptr<plugins::StepValueCache>& cache,
                                      const std::vector<std::shared_ptr<Trial>>& trial_list, std::stop_token stop) {
  r.session = std::make_unique<vigil_session>();
  r.session->rule_name = r.config.configuration_name;
  r.session->stop = stop;
  r.session->cache = cache;
  r.session->log = [this, name = r.config.configuration_name](vigil_log_level level, const std::string& msg) {
    if (options.on_log) options.on_log(name, level, msg);
  };
  r.handles.clear();
  for (const auto& t : trial_list) r.handles.push_back(vigil_trial{t, r.session.get()});
  r.handle_ptrs.clear();
  for (auto& h : r.handles) r.handle_ptrs.push_back(&h);
  vigil_rule_context ctx{};
  ctx.struct_size = sizeof(ctx);
  ctx.host = plugins::host_api();
  ctx.session = r.session.get();
  ctx.trials = r.handle_ptrs.data();
  ctx.trial_count = uint32_t(r.handle_ptrs.size());
  ctx.params = r.params.data();
  ctx.param_count = r.params.size();
  ctx.instance_name = r.config.configuration_name.c_str();
  vigil_error err{};
  err.struct_size = sizeof(err);
  vigil_status st;
  try {
    st = r.type.factory->create(r.type.factory, r.type.descriptor->id, &ctx, &r.rule, &err);
  } catch (...) {
    fail_rule(r, "RuleError: the plugin threw a C++ exception across the C ABI while creating the rule");
    r.rule = nullptr;
    return false;
  }
  if (st != VIGIL_OK || !r.rule) {
    fail_rule(r, fmt::format("{}: {}", class_of(st), st == VIGIL_OK ? "create() returned no rule" : abi_message(err)));
    r.rule = nullptr;
    return false;
  }
  if (r.rule->struct_size < offsetof(vigil_rule, invoke_at_step) + sizeof(void*) || !r.rule->invoke_at_step ||
      !r.rule->destroy) {
    fail_rule(r, "RuleError: the plugin returned an incomplete rule (no invoke_at_step or destroy)");
    return false;
  }
  return true;
}

namespace {

struct RequiredTensor {
  uint32_t trial_index;
  std::string name;
  bool is_regex;
  std::vector<int64_t> steps;
};

vigil_status add_required(void* ctx, uint32_t trial_index, const char* name, bool is_regex, const vigil_step* steps,
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

}  // namespace

void Evaluator::Impl::prefetch(RuleInstance& r, Trial& base, const std::vector<std::shared_ptr<Trial>>& trial_list,
                               int64_t step, plugins::StepValueCache& cache) {
  if (!r.rule->required_tensors) return;
  std::vector<RequiredTensor> wanted;
  vigil_required_sink sink{&wanted, add_required};
  vigil_error err{};
  err.struct_size = sizeof(err);
  vigil_status st;
  try {
    st = r.rule->required_tensors(r.rule, step, &sink, &err);
  } catch (...) {
    fail_rule(r, "RuleError: the plugin threw a C++ exception across the C ABI in required_tensors");
    return;
  }
  if (vigil_status_is_skip(st) || st == VIGIL_OK) {
    // Read each required value once into the step's cache; the rule's own reads then hit it.
    for (const auto& req : wanted) {
      if (req.trial_index >= trial_list.size()) continue;
      Trial& t = req.trial_index == 0 ? base : *trial_list[req.trial_index];
      std::vector<std::string> names;
      if (req.is_regex) names = t.tensor_names(TensorNameQuery{.regex = {req.name}}).value_or(std::vector<std::string>{});
      else names.push_back(req.name);
      for (const auto& name : names)
        for (int64_t s : req.steps.empty() ? std::vector<int64_t>{step} : req.steps) {
          auto value = t.value(name, s);
          if (value) cache.put({&t, name, s, Mode::Global, ""}, std::move(*value));
        }
    }
    return;
  }
  if (!known_status(st)) fail_rule(r, fmt::format("RuleError: required_tensors returned unknown status {}", st));
  else if (vigil_status_is_failure(st)) fail_rule(r, fmt::format("{}: {}", class_of(st), abi_message(err)));
}

void Evaluator::Impl::invoke(RuleInstance& r, int64_t step) {
  vigil_error err{};
  err.struct_size = sizeof(err);
  bool met = false;
  const int64_t views_before = r.session->outstanding_views->load();
  vigil_status st;
  try {
    st = r.rule->invoke_at_step(r.rule, step, &met, &err);
  } catch (...) {
    fail_rule(r, fmt::format("RuleError: the plugin threw a C++ exception across the C ABI at step {}", step));
    return;
  }
  std::vector<std::string> evidence;
  {
    std::lock_guard lock(r.session->evidence_mu);
    evidence.swap(r.session->evidence);
  }
  if (const int64_t leaked = r.session->outstanding_views->load() - views_before; leaked > 0) {
    fail_rule(r, fmt::format("RuleError: the rule kept {} tensor view(s) past invoke_at_step at step {} "
                             "(views must be released before the call returns)",
                             leaked, step));
    return;
  }
  if (!known_status(st)) {
    fail_rule(r, fmt::format("RuleError: invoke_at_step returned unknown status {} at step {}", st, step));
    return;
  }
  const bool signal = st == VIGIL_S_RULE_CONDITION_MET;
  switch (vigil_status_classify(st)) {
    case VIGIL_CLASS_OK:
    case VIGIL_CLASS_SIGNAL: {
      if (!met && !signal) return;
      Trigger trigger{.step = step};
      for (const auto& e : evidence) {
        try {
          trigger.evidence.push_back(nlohmann::json::parse(e));
        } catch (const nlohmann::json::exception&) {
          trigger.evidence.push_back(e);  // not JSON: keep the text
        }
      }
      board->add_trigger(r.index, std::move(trigger));
      if (!r.fired) {
        r.fired = true;
        board->set(r.index, RuleEvaluationStatus::IssuesFound,
                   "RuleEvaluationConditionMet: " + Error::condition_met(r.type.descriptor->name, step).message + "\n");
      }
      if (signal && (err.flags & VIGIL_ERRF_END_OF_RULE)) finish(r);
      return;
    }
    case VIGIL_CLASS_SKIP:
      if (options.on_log) options.on_log(r.config.configuration_name, VIGIL_LOG_DEBUG, abi_message(err));
      return;
    case VIGIL_CLASS_STOP: finish(r); return;
    case VIGIL_CLASS_WAIT:
    case VIGIL_CLASS_FAILURE:
      fail_rule(r, fmt::format("{}: {}", class_of(st), abi_message(err)));
      return;
  }
}

void Evaluator::Impl::run_group(const std::string& base_path, std::vector<RuleInstance*> group, std::stop_token stop) {
  auto stopping = [&] {
    for (auto* r : group)
      if (!r->finished) {
        r->finished = true;
        board->set(r->index, RuleEvaluationStatus::Stopping);
      }
  };
  auto base = open_trial(base_path, stop);
  if (!base) {
    if (base.error().code == ErrorCode::Cancelled) return stopping();
    for (auto* r : group) fail_rule(*r, client_error(base.error()));
    return;
  }
  auto cache = std::make_shared<plugins::StepValueCache>();
  for (auto* r : group) {
    std::vector<std::shared_ptr<Trial>> trial_list{*base};
    bool ok = true;
    for (const auto& other : r->config.other_trials) {
      auto t = open_trial(other, stop);
      if (!t) {
        fail_rule(*r, client_error(t.error()));
        ok = false;
        break;
      }
      trial_list.push_back(*t);
    }
    if (ok) create_instance(*r, cache, trial_list, stop);
  }

  auto active = [&] {
    std::vector<RuleInstance*> out;
    for (auto* r : group)
      if (!r->finished) out.push_back(r);
    return out;
  };
  int64_t step = INT64_MAX;
  for (auto* r : active()) step = std::min(step, r->config.start_step);
  auto last_progress = std::chrono::steady_clock::now() - std::chrono::seconds(2);
  Trial& trial = **base;

  while (true) {
    for (auto* r : active())
      if (r->config.end_step && step >= *r->config.end_step) finish(*r);
    auto rules_now = active();
    if (rules_now.empty()) break;
    if (stop.stop_requested()) return stopping();

    auto waited = trial.wait_for_steps({step}, Mode::Global, stop, options.idle_timeout);
    if (!waited) {
      switch (waited.error().code) {
        case ErrorCode::StepUnavailable: {
          // Jump to the next saved step: every step in between is unavailable too.
          auto known = trial.steps(Mode::Global, true).value_or(std::vector<int64_t>{});
          auto next = std::upper_bound(known.begin(), known.end(), step);
          step = next == known.end() ? step + 1 : *next;
          continue;
        }
        case ErrorCode::NoMoreData:
          for (auto* r : rules_now) finish(*r);
          break;
        case ErrorCode::Cancelled: return stopping();
        case ErrorCode::Timeout:
          if (options.on_log)
            options.on_log("", VIGIL_LOG_WARNING,
                           fmt::format("no new step in {} for {} ms (--idle-timeout): ending the evaluation",
                                       base_path, options.idle_timeout ? options.idle_timeout->count() : 0));
          for (auto* r : rules_now) finish(*r);
          break;
        default:
          for (auto* r : rules_now) fail_rule(*r, client_error(waited.error()));
          break;
      }
      break;
    }

    if (std::chrono::steady_clock::now() - last_progress >= std::chrono::seconds(1)) {
      last_progress = std::chrono::steady_clock::now();
      if (options.on_progress) options.on_progress(base_path, step);
    }
    trial.hold_refresh();  // smdebug's no_refresh: one consistent view per step
    cache->clear();
    std::vector<std::shared_ptr<Trial>> dummy;
    for (auto* r : rules_now)
      if (r->config.start_step <= step && !r->finished) {
        std::vector<std::shared_ptr<Trial>> trial_list;
        for (auto& h : r->handles) trial_list.push_back(h.trial);
        prefetch(*r, trial, trial_list, step, *cache);
      }
    for (auto* r : rules_now)
      if (r->config.start_step <= step && !r->finished) {
        invoke(*r, step);
        board->progress(r->index, step);
      }
    cache->clear();
    trial.release_refresh();
    ++step;
  }
}

}  // namespace vigil::evaluate
