#include "evaluate/evaluator.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "common/os.h"
#include "evaluate/rule_instance.h"
#include "evaluate/step_readahead.h"
#include "plugin_host/param_values.h"
#include "plugin_host/profiler_extension.h"
#include "plugin_host/profiles.h"
#include "profiler/profiler_trial.h"
#include "storage/s3_uri.h"
#include "trial/trial.h"

namespace vigil::evaluate {

namespace fs = std::filesystem;
using plugin_host::BoundParams;
using plugin_host::RuleType;

namespace {

struct ConfiguredRule {
  size_t index = 0;  // in the job and on the status board
  RuleConfig config;
  RuleType type;
  BoundParams params;
  std::unique_ptr<RuleInstance> instance;
  // Ready once the plugin's preparation of the rule returned (ABI 1.4); not valid without a preparer.
  std::shared_future<void> prepared;
  bool finished = false;
  bool fired = false;
  std::optional<int64_t> last_step;  // the last step the rule was invoked at
};

// How SageMaker words an Error status caused by the user's data or configuration.
std::string client_error(const Error& e) {
  if (e.code == ErrorCode::MissingCollectionFiles)
    return "ClientError: No debugging data was saved by the training job. Check that the debugger hook was configured "
           "correctly before starting the training job. Exception: " + e.message;
  return fmt::format("ClientError: {}: {}", e.class_name(), e.message);
}

}  // namespace

Result<std::string> trusted_rule_file(std::string_view source, bool allow_insecure) {
  std::string_view path = source;
  if (path.starts_with("file://")) path.remove_prefix(7);
  if (path.starts_with("s3://")) return std::string(source);
  if (!path.starts_with('/'))
    return fail(Error::invalid_argument(fmt::format(
        "'{}' is a relative path (a rule file is named by an absolute path: a relative one would depend on the working "
        "directory)",
        source)));
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(fs::path(path), ec))) {
    const fs::path folder = fs::weakly_canonical(fs::path(path).parent_path(), ec);
    if (ec) return std::string(path);
    if (auto folders = plugin_host::trusted_folder_chain(folder, allow_insecure); !folders) return fail(folders.error());
    return (folder / fs::path(path).filename()).string();
  }
  auto real = plugin_host::trusted_real_path(fs::path(path), allow_insecure);
  if (!real) return fail(Error::invalid_argument(fmt::format("{}: {}", path, real.error().message)));
  return real->string();
}

struct Evaluator::Impl {
  EvaluatorOptions options;
  std::vector<std::unique_ptr<ConfiguredRule>> rules;
  std::unique_ptr<StatusBoard> board;
  std::mutex trials_mu;
  std::map<std::string, std::shared_ptr<Trial>> trials;  // by path, shared by every rule reading it

  Result<std::shared_ptr<Trial>> open_trial(const std::string& path, std::stop_token stop);
  void run_group(const std::string& base_path, std::vector<ConfiguredRule*> group, std::stop_token stop);
  void run_profiler_rule(ConfiguredRule& r, std::stop_token stop);
  std::jthread start_preparing(std::stop_token stop);
  Result<std::unique_ptr<RuleInstance>> create_instance(ConfiguredRule& r, std::vector<std::shared_ptr<Trial>> trials,
                                                        std::shared_ptr<plugin_host::StepValueCache> cache,
                                                        std::stop_token stop,
                                                        std::shared_ptr<plugin_host::ProfilerSource> profiler = nullptr);
  std::filesystem::path output_directory() const {
    return options.output_directory.value_or(options.status_file ? options.status_file->parent_path() : fs::path());
  }
  RuleLog rule_log(const ConfiguredRule& r) const {
    return [this, name = r.config.configuration_name](vigil_log_level level, const std::string& msg) {
      if (options.on_log) options.on_log(name, level, msg);
    };
  }
  void apply(ConfiguredRule& r, int64_t step, const InvokeOutcome& outcome);
  void count_judgement(ConfiguredRule& r, const InvokeOutcome& outcome);
  void tick(const std::vector<ConfiguredRule*>& rules);
  void finish(ConfiguredRule& r) {
    if (r.finished) return;
    r.finished = true;
    if (!r.fired) board->set(r.index, RuleEvaluationStatus::NoIssuesFound);
    finished(r);
  }
  void fail_rule(ConfiguredRule& r, std::string details) {
    if (r.finished) return;
    r.finished = true;
    board->set(r.index, RuleEvaluationStatus::Error, std::move(details));
    finished(r);
  }
  void finished(const ConfiguredRule& r) {
    if (options.watcher.judged) options.watcher.judged(r.index, board->get(r.index).judgement);
    if (options.watcher.finished) options.watcher.finished(r.index);
  }
  // Runs `call` (into the rule's own code) between the watcher's call_began and call_ended.
  template <typename Call>
  auto watched(const ConfiguredRule& r, RuleCall kind, int64_t step, Call&& call) {
    if (options.watcher.call_began) options.watcher.call_began(r.index, kind, step);
    struct Ended {
      const RuleWatcher& watcher;
      size_t rule;
      ~Ended() {
        if (watcher.call_ended) watcher.call_ended(rule);
      }
    } ended{options.watcher, r.index};
    return call();
  }
};

std::string_view rule_call_name(RuleCall call) {
  switch (call) {
    case RuleCall::Create: return "create";
    case RuleCall::Step: return "step";
    case RuleCall::Destroy: return "destroy";
  }
  return "?";
}

std::optional<RuleCall> parse_rule_call(std::string_view name) {
  for (RuleCall c : {RuleCall::Create, RuleCall::Step, RuleCall::Destroy})
    if (rule_call_name(c) == name) return c;
  return std::nullopt;
}

Result<std::vector<ResolvedRule>> resolve_job(const plugin_host::PluginRegistry& registry, JobConfig job) {
  if (auto v = validate_job(job); !v) return fail(v.error());
  std::vector<ResolvedRule> resolved;
  for (size_t i = 0; i < job.rules.size(); ++i) {
    auto& config = job.rules[i];
    const std::string where = rule_field(job, i);
    const std::string field = where + ".RuleParameters";
    const RuleType* type = nullptr;
    auto params_given = config.parameters;
    if (config.source && config.kind == RuleKind::Profiler)
      return fail(Error::invalid_argument(
          fmt::format("{}.source_s3_uri: Python rule files run as debug rules (DebugRuleConfigurations) only", field)));
    if (config.source) {
      // A custom rule file: the Python plugin runs class rule_to_invoke from source_s3_uri, the
      // checked real path of the file.
      auto checked = trusted_rule_file(*config.source, registry.options().allow_insecure);
      if (!checked) return fail(Error::invalid_argument(fmt::format("{}.source_s3_uri: {}", field, checked.error().message)));
      config.source = std::move(*checked);
      type = registry.find(kPythonRuleId);
      if (!type)
        return fail(Error::invalid_argument(fmt::format(
            "{}.source_s3_uri: Python rule files need the Python rule plugin (vigil.python.CustomRule), which is not "
            "loaded",
            field)));
      params_given["source_s3_uri"] = *config.source;
      params_given["rule_to_invoke"] = config.rule_to_invoke;
    } else {
      type = registry.find(config.rule_to_invoke);
    }
    if (!type) {
      std::string known;
      for (const auto& r : registry.rules()) known += (known.empty() ? "" : ", ") + std::string(r.descriptor->name);
      return fail(Error::invalid_argument(fmt::format("{}.rule_to_invoke: unknown rule '{}' (loaded rules: {})", field,
                                                      config.rule_to_invoke, known.empty() ? "none" : known)));
    }
    if (!config.other_trials.empty() && !(type->descriptor->flags & VIGIL_RULEF_MULTI_TRIAL))
      return fail(Error::invalid_argument(
          fmt::format("{}.other_trials: rule {} reads only its base trial", field, type->descriptor->name)));
    const std::string profile = config.profile.value_or(std::string(plugin_host::kDefaultProfile));
    auto params = BoundParams::bind(*type->descriptor, params_given, config.configuration_name, profile);
    if (!params) return fail(params.error());
    std::vector<std::string> paths{config.base_trial};
    paths.insert(paths.end(), config.other_trials.begin(), config.other_trials.end());
    for (const auto& path : paths) {
      // A trial may be in object storage (the trial and the profiler trial read s3:// through the
      // store); it may not exist yet when a live job is followed, so only the location is checked.
      if (storage::is_s3_uri(path)) {
        if (auto uri = storage::parse_s3_uri(path); !uri)
          return fail(Error::invalid_argument(fmt::format("{}: trial '{}': {}", where, path, uri.error().message)));
        continue;
      }
      std::error_code ec;
      if (!fs::is_directory(path, ec))
        return fail(Error::invalid_argument(
            fmt::format("{}: {} '{}' is not a directory", where,
                        config.kind == RuleKind::Profiler ? "profiler data folder" : "trial", path)));
    }
    std::string rule_name = config.source ? config.rule_to_invoke : std::string(type->descriptor->name);
    resolved.push_back(ResolvedRule{.config = std::move(config),
                                    .type = *type,
                                    .params = std::move(*params),
                                    .rule_name = std::move(rule_name),
                                    .profile = profile});
  }
  return resolved;
}

Evaluator::Evaluator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Evaluator::~Evaluator() = default;

Result<std::unique_ptr<Evaluator>> Evaluator::create(const plugin_host::PluginRegistry& registry, JobConfig job,
                                                     EvaluatorOptions options) {
  auto resolved = resolve_job(registry, std::move(job));
  if (!resolved) return fail(resolved.error());
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  std::vector<RuleStatus> initial;
  for (size_t i = 0; i < resolved->size(); ++i) {
    auto& rule = (*resolved)[i];
    auto r = std::make_unique<ConfiguredRule>();
    r->index = i;
    r->type = rule.type;
    r->params = std::move(rule.params);
    r->config = std::move(rule.config);
    initial.push_back(RuleStatus{.configuration_name = r->config.configuration_name,
                                 .rule_name = std::move(rule.rule_name),
                                 .profile = std::move(rule.profile),
                                 .kind = r->config.kind,
                                 .status = RuleEvaluationStatus::InProgress});
    impl->rules.push_back(std::move(r));
  }
  impl->board = std::make_unique<StatusBoard>(std::move(initial), impl->options.status_file, impl->options.on_status);
  if (auto w = impl->board->flush(); !w) return fail(w.error());
  return std::unique_ptr<Evaluator>(new Evaluator(std::move(impl)));
}

std::vector<RuleStatus> Evaluator::statuses() const { return impl_->board->all(); }

// ABI 1.4: the rules whose plugins prepare them (the Python plugin: interpreter, imports, the rule
// file and its class) get ready on a thread of their own, in job order, while the trials may not
// exist yet; rules of other plugins do not wait for it, and each rule's creation waits for its own
// preparation only. A failed preparation is logged and the rule is created as without one: create()
// reports the failure as it always did.
std::jthread Evaluator::Impl::start_preparing(std::stop_token stop) {
  std::vector<std::pair<ConfiguredRule*, std::promise<void>>> work;
  for (auto& r : rules)
    if (r->type.preparer) {
      std::promise<void> done;
      r->prepared = done.get_future().share();
      work.emplace_back(r.get(), std::move(done));
    }
  if (work.empty()) return {};
  return std::jthread([this, stop, work = std::move(work)]() mutable {
    os::block_sigpipe_on_this_thread();
    for (auto& item : work) {
      ConfiguredRule* r = item.first;
      if (!stop.stop_requested()) {
        auto prepared = watched(*r, RuleCall::Create, r->config.start_step, [&] {
          return prepare_rule(r->type, r->params, r->config.configuration_name);
        });
        if (!prepared && options.on_log)
          options.on_log(r->config.configuration_name, VIGIL_LOG_DEBUG,
                         fmt::format("preparing the rule failed (its creation will report it): {}",
                                     prepared.error().message));
      }
      item.second.set_value();
    }
  });
}

// Creates the rule through its plugin once its preparation, if any, has returned.
Result<std::unique_ptr<RuleInstance>> Evaluator::Impl::create_instance(
    ConfiguredRule& r, std::vector<std::shared_ptr<Trial>> trials, std::shared_ptr<plugin_host::StepValueCache> cache,
    std::stop_token stop, std::shared_ptr<plugin_host::ProfilerSource> profiler) {
  if (r.prepared.valid()) r.prepared.wait();
  return watched(r, RuleCall::Create, r.config.start_step, [&] {
    return RuleInstance::create(r.type, r.params, r.config.configuration_name, std::move(trials), std::move(cache),
                                stop, rule_log(r), output_directory(), std::move(profiler));
  });
}

void Evaluator::run(std::stop_token stop) {
  std::jthread preparing = impl_->start_preparing(stop);
  for (auto& r : impl_->rules)
    if (impl_->options.on_status) impl_->options.on_status(impl_->board->get(r->index));
  std::map<std::string, std::vector<ConfiguredRule*>> groups;
  for (auto& r : impl_->rules)
    if (r->config.kind == RuleKind::Debug) groups[r->config.base_trial].push_back(r.get());
  {
    std::vector<std::jthread> threads;
    for (auto& [path, group] : groups)
      threads.emplace_back([this, path, group, stop] {
        os::block_sigpipe_on_this_thread();
        impl_->run_group(path, group, stop);
      });
    // Profiler rules wait on their own windows: a thread each.
    for (auto& r : impl_->rules)
      if (r->config.kind == RuleKind::Profiler)
        threads.emplace_back([this, rule = r.get(), stop] {
          os::block_sigpipe_on_this_thread();
          impl_->run_profiler_rule(*rule, stop);
        });
  }
  if (preparing.joinable()) preparing.join();
  for (auto& r : impl_->rules)  // destroy the rule instances
    if (r->instance)
      impl_->watched(*r, RuleCall::Destroy, r->config.start_step, [&] { r->instance.reset(); });
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

// A step's call judged unless the rule said it did not or skipped the step; stops and failures end
// the rule instead of counting.
void Evaluator::Impl::count_judgement(ConfiguredRule& r, const InvokeOutcome& outcome) {
  if (outcome.condition_met) return board->count_judgement(r.index, true);
  switch (vigil_status_classify(outcome.status)) {
    case VIGIL_CLASS_OK:
      return board->count_judgement(r.index, !outcome.not_judged, outcome.not_judged_reason, /*reason_from_rule=*/true);
    case VIGIL_CLASS_SKIP: return board->count_judgement(r.index, false, outcome.details());
    case VIGIL_CLASS_STOP:  // a rule may end because it never had its data (a profiler rule without any)
      if (outcome.not_judged) board->count_judgement(r.index, false, outcome.not_judged_reason, /*reason_from_rule=*/true);
      return;
    default: return;
  }
}

// One wall-clock tick for the rules that take them, while no new step arrives. A condition met is
// reported as at the rule's last step (its start step before any), once per step.
void Evaluator::Impl::tick(const std::vector<ConfiguredRule*>& rules) {
  const double now = now_epoch_seconds();
  for (auto* r : rules) {
    if (r->finished || !r->instance || !r->instance->takes_ticks()) continue;
    const int64_t at = r->last_step.value_or(r->config.start_step);
    auto outcome = watched(*r, RuleCall::Step, at, [&] { return r->instance->invoke_at_time(now, r->last_step.value_or(-1)); });
    if (outcome.condition_met) {
      if (board->get(r->index).last_trigger_step == at) continue;
    }
    apply(*r, at, outcome);
  }
}

// Maps one call's outcome onto the rule's status (smdebug's invoke_rule).
void Evaluator::Impl::apply(ConfiguredRule& r, int64_t step, const InvokeOutcome& outcome) {
  if (outcome.condition_met) {
    Trigger trigger{.step = step};
    for (const auto& e : outcome.evidence) {
      try {
        trigger.evidence.push_back(nlohmann::json::parse(e));
      } catch (const nlohmann::json::exception&) {
        trigger.evidence.push_back(e);  // not JSON: keep the text
      }
    }
    if (options.watcher.trigger_added) options.watcher.trigger_added(r.index, trigger);
    board->add_trigger(r.index, std::move(trigger));
    if (!r.fired) {
      r.fired = true;
      board->set(r.index, RuleEvaluationStatus::IssuesFound,
                 "RuleEvaluationConditionMet: " + Error::condition_met(board->get(r.index).rule_name, step).message + "\n");
    }
    if (outcome.end_of_rule) finish(r);
    return;
  }
  switch (vigil_status_classify(outcome.status)) {
    case VIGIL_CLASS_OK:
    case VIGIL_CLASS_SIGNAL: return;
    case VIGIL_CLASS_SKIP:
      if (options.on_log) options.on_log(r.config.configuration_name, VIGIL_LOG_DEBUG, outcome.details());
      return;
    case VIGIL_CLASS_STOP: finish(r); return;
    case VIGIL_CLASS_WAIT:
    case VIGIL_CLASS_FAILURE: fail_rule(r, outcome.details()); return;
  }
}

void Evaluator::Impl::run_group(const std::string& base_path, std::vector<ConfiguredRule*> group,
                                std::stop_token stop) {
  auto stopping = [&] {
    for (auto* r : group)
      if (!r->finished) {
        r->finished = true;
        board->set(r->index, RuleEvaluationStatus::Stopping);
        finished(*r);
      }
  };
  auto base = open_trial(base_path, stop);
  if (!base) {
    if (base.error().code == ErrorCode::Cancelled) return stopping();
    for (auto* r : group) fail_rule(*r, client_error(base.error()));
    return;
  }
  auto cache = std::make_shared<plugin_host::StepValueCache>();
  StepReadahead readahead(*base, cache);
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
    if (!ok) continue;
    auto instance = create_instance(*r, std::move(trial_list), cache, stop);
    if (!instance) {
      fail_rule(*r, InvokeOutcome{.status = static_cast<vigil_status>(instance.error().code), .error = instance.error()}
                        .details());
      continue;
    }
    r->instance = std::move(*instance);
  }

  auto active = [&] {
    std::vector<ConfiguredRule*> out;
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

    // Rules that judge time get a tick every tick_interval while the step has not arrived.
    const bool ticking = options.follow && std::any_of(rules_now.begin(), rules_now.end(), [](ConfiguredRule* r) {
                           return r->instance && r->instance->takes_ticks();
                         });
    auto slice = options.idle_timeout;
    if (ticking) slice = options.idle_timeout ? std::min(options.tick_interval, *options.idle_timeout) : options.tick_interval;
    // A step that has not arrived yet is waited for after what the once-a-second status write held
    // back has gone out: a live job's last trigger must not wait for the next step.
    auto waited = trial.wait_for_steps({step}, Mode::Global, stop, std::chrono::milliseconds(0));
    if (!waited && waited.error().code == ErrorCode::Timeout) {
      (void)board->flush_if_unwritten();
      waited = trial.wait_for_steps({step}, Mode::Global, stop, slice);
    }
    for (auto idle = slice.value_or(std::chrono::milliseconds(0));
         ticking && !waited && waited.error().code == ErrorCode::Timeout; idle += *slice) {
      if (options.idle_timeout && idle >= *options.idle_timeout) break;  // the real --idle-timeout
      tick(rules_now);
      slice = options.tick_interval;
      if (options.idle_timeout) slice = std::min(*slice, *options.idle_timeout - idle);
      waited = trial.wait_for_steps({step}, Mode::Global, stop, slice);
    }
    if (!waited) {
      switch (waited.error().code) {
        case ErrorCode::StepUnavailable: {
          // Jump to the next saved step: every step in between is unavailable too.
          const auto next = trial.next_step(step, Mode::Global, true).value_or(std::nullopt);
          step = next.value_or(step + 1);
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
    // The next complete step, if there is one already: read ahead while the rules run on this one.
    readahead.begin_step(step, trial.next_step(step).value_or(std::nullopt));
    auto due = [&](ConfiguredRule* r) { return r->config.start_step <= step && !r->finished; };
    for (auto* r : rules_now)
      if (due(r)) {
        auto outcome = watched(*r, RuleCall::Step, step, [&] { return r->instance->prefetch(step); });
        if (vigil_status_is_failure(outcome.status)) fail_rule(*r, outcome.details());
      }
    for (auto* r : rules_now)
      if (due(r)) {
        const auto outcome = watched(*r, RuleCall::Step, step, [&] { return r->instance->invoke(step); });
        r->last_step = step;
        count_judgement(*r, outcome);
        apply(*r, step, outcome);
        board->progress(r->index, step);
        if (options.watcher.step_done) options.watcher.step_done(r->index, step);
      }
    trial.release_refresh();
    ++step;
  }
}

// A profiler rule (builtin-rules §1.4): invoked at window 0, 1, 2, ... until it stops (its data has
// ended: NoMoreProfilerData), fails, ends with its verdict, or the evaluation is stopped. The rule
// waits for each window's data itself, through the extension (plugin_host/profiler_extension.h).
void Evaluator::Impl::run_profiler_rule(ConfiguredRule& r, std::stop_token stop) {
  auto trial = profiler::ProfilerTrial::open(r.config.base_trial);
  if (!trial) {
    fail_rule(r, client_error(trial.error()));
    return;
  }
  auto source = std::make_shared<plugin_host::ProfilerSource>(std::move(*trial), options.follow,
                                                              std::max(options.poll_interval, std::chrono::milliseconds(200)));
  auto instance = create_instance(r, {}, nullptr, stop, source);
  if (!instance) {
    fail_rule(r, InvokeOutcome{.status = static_cast<vigil_status>(instance.error().code), .error = instance.error()}
                     .details());
    return;
  }
  r.instance = std::move(*instance);
  for (int64_t window = r.config.start_step; !r.finished; ++window) {
    if (r.config.end_step && window >= *r.config.end_step) {
      finish(r);
      break;
    }
    const auto outcome = watched(r, RuleCall::Step, window, [&] { return r.instance->invoke(window); });
    if (stop.stop_requested() && !r.finished && outcome.status == VIGIL_E_CANCELLED) {
      r.finished = true;
      board->set(r.index, RuleEvaluationStatus::Stopping);
      finished(r);
      break;
    }
    r.last_step = window;
    count_judgement(r, outcome);
    apply(r, window, outcome);
    board->progress(r.index, window);
    if (options.watcher.step_done) options.watcher.step_done(r.index, window);
    if (options.on_progress) options.on_progress(r.config.base_trial, window);
  }
}

}  // namespace vigil::evaluate
