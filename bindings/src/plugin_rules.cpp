// Plugin rules (built-in, C, C++) from Python: loaded and created through the same host code as
// `vigil evaluate` (PluginRegistry, BoundParams, RuleInstance), driven by vigil.rules.PluginRule
// with smdebug's invoke_rule.
#include <fmt/format.h>

#include <filesystem>
#include <mutex>
#include <stop_token>

#include "bindings.h"
#include "evaluate/evaluator.h"
#include "evaluate/rule_instance.h"
#include "plugin_host/param_values.h"
#include "plugin_host/profiles.h"
#include "plugin_host/plugin_loader.h"
#include "trial/trial.h"

namespace vigil::python {

namespace {

namespace fs = std::filesystem;

std::unique_ptr<plugin_host::PluginRegistry> load_registry(const std::string& path) {
  auto registry = std::make_unique<plugin_host::PluginRegistry>();
  std::error_code ec;
  const fs::path p = fs::absolute(path, ec);
  {
    py::gil_scoped_release nogil;
    if (fs::is_directory(p, ec)) registry->load_directory(p);
    else (void)registry->load_file(p);
  }
  return registry;
}

std::string refusals(const plugin_host::PluginRegistry& registry) {
  std::string out;
  for (const auto& r : registry.refused()) out += fmt::format("; refused {}: {}", r.path.string(), r.reason);
  return out;
}

class PyRuleInstance {
 public:
  PyRuleInstance(const std::string& plugin_path, const std::string& rule_name,
                 std::vector<std::shared_ptr<Trial>> trials, const std::map<std::string, std::string>& params,
                 const std::string& configuration_name) {
    registry_ = load_registry(plugin_path);
    const plugin_host::RuleType* type = registry_->find(rule_name);
    if (!type) {
      std::string known;
      for (const auto& r : registry_->rules()) known += (known.empty() ? "" : ", ") + std::string(r.descriptor->name);
      throw HostError(Error::invalid_argument(fmt::format("unknown rule '{}' in {} (loaded rules: {}){}", rule_name,
                                                          plugin_path, known.empty() ? "none" : known,
                                                          refusals(*registry_))));
    }
    if (trials.size() > 1 && !(type->descriptor->flags & VIGIL_RULEF_MULTI_TRIAL))
      throw HostError(Error::invalid_argument(fmt::format("rule {} reads only its base trial", type->descriptor->name)));
    // The reserved vigil_profile key chooses the defaults, as in a job's RuleParameters.
    auto given = params;
    // A Python rule file passes the plugin trust check here too, as in a job (evaluator.h).
    if (auto source = given.find("source_s3_uri");
        source != given.end() && std::string_view(type->descriptor->id) == evaluate::kPythonRuleId)
      source->second = unwrap(evaluate::trusted_rule_file(source->second, registry_->options().allow_insecure));
    std::string profile(plugin_host::kDefaultProfile);
    if (auto it = given.find(VIGIL_PROFILE_PARAM); it != given.end()) {
      if (!plugin_host::find_profile(it->second))
        throw HostError(Error::invalid_argument(fmt::format("{}: unknown profile '{}' (profiles: {})", VIGIL_PROFILE_PARAM,
                                                            it->second, plugin_host::profile_names())));
      profile = it->second;
      given.erase(it);
    }
    auto bound = plugin_host::BoundParams::bind(*type->descriptor, given, configuration_name, profile);
    params_ = std::make_unique<plugin_host::BoundParams>(unwrap(std::move(bound)));
    rule_name_ = type->descriptor->name;
    cache_ = std::make_shared<plugin_host::StepValueCache>();
    auto log = [this](vigil_log_level level, const std::string& message) {
      std::lock_guard lock(log_mu_);
      logs_.emplace_back(static_cast<int>(level), message);
    };
    Result<std::unique_ptr<evaluate::RuleInstance>> created = fail(Error::internal("not created"));
    {
      py::gil_scoped_release nogil;
      created = evaluate::RuleInstance::create(*type, *params_, configuration_name, std::move(trials), cache_,
                                               stop_.get_token(), log);
    }
    instance_ = unwrap(std::move(created));
  }

  ~PyRuleInstance() {
    stop_.request_stop();
    py::gil_scoped_release nogil;
    instance_.reset();  // destroy the rule before its plugin can go
    params_.reset();
    registry_.reset();
  }

  const std::string& rule_name() const { return rule_name_; }

  // (condition_met, evidence, rule name the rule reported); a status other than OK raises the
  // exception it stands for.
  py::tuple invoke(int64_t step) {
    evaluate::InvokeOutcome pre, out;
    {
      py::gil_scoped_release nogil;
      cache_->clear();
      pre = instance_->prefetch(step);
      if (!vigil_status_is_failure(pre.status)) out = instance_->invoke(step);
      cache_->clear();
    }
    flush_logs();
    if (vigil_status_is_failure(pre.status)) throw HostError(pre.error);
    if (out.condition_met) return py::make_tuple(true, out.evidence, out.error.rule);
    if (out.status != VIGIL_OK) throw HostError(out.error);
    return py::make_tuple(false, out.evidence, std::string());
  }

 private:
  void flush_logs() {
    std::vector<std::pair<int, std::string>> lines;
    {
      std::lock_guard lock(log_mu_);
      lines.swap(logs_);
    }
    if (lines.empty()) return;
    py::object logger = py::module_::import("logging").attr("getLogger")("vigil.rules." + rule_name_);
    for (const auto& [level, message] : lines) logger.attr("log")(level >= 50 ? 40 : level, message);
  }

  std::unique_ptr<plugin_host::PluginRegistry> registry_;
  std::unique_ptr<plugin_host::BoundParams> params_;
  std::shared_ptr<plugin_host::StepValueCache> cache_;
  std::stop_source stop_;
  std::unique_ptr<evaluate::RuleInstance> instance_;
  std::string rule_name_;
  std::mutex log_mu_;
  std::vector<std::pair<int, std::string>> logs_;
};

}  // namespace

void register_plugin_rules(py::module_& m) {
  py::class_<PyRuleInstance>(m, "PluginRuleInstance", "One rule instance created through a plugin's factory.")
      .def_property_readonly("rule_name", &PyRuleInstance::rule_name)
      .def("invoke", &PyRuleInstance::invoke, py::arg("step"),
           "Prefetches and invokes the rule at a global step: (condition_met, evidence JSON strings).");

  m.def(
      "create_plugin_rule",
      [](const std::string& plugin_path, const std::string& rule_name, std::vector<std::shared_ptr<Trial>> trials,
         const std::map<std::string, std::string>& params, const std::string& configuration_name) {
        if (trials.empty()) throw py::value_error("a rule needs a base trial");
        return std::make_unique<PyRuleInstance>(plugin_path, rule_name, std::move(trials), params, configuration_name);
      },
      py::arg("plugin_path"), py::arg("rule_name"), py::arg("trials"), py::arg("params"),
      py::arg("configuration_name"));

  m.def(
      "plugin_rules",
      [](const std::string& plugin_path) {
        auto registry = load_registry(plugin_path);
        py::list out;
        for (const auto& r : registry->rules()) {
          std::vector<std::string> params;
          for (uint32_t i = 0; i < r.descriptor->param_count; ++i) params.emplace_back(r.descriptor->params[i].name);
          out.append(py::make_tuple(std::string(r.descriptor->id), std::string(r.descriptor->name),
                                    std::string(r.descriptor->description ? r.descriptor->description : ""), params));
        }
        return out;
      },
      py::arg("plugin_path"), "[(id, name, description, [parameter names])] of a plugin file or folder.");
}

}  // namespace vigil::python
