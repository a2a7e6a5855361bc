// Vigil C++ SDK: plugin registration and the noexcept trampolines.
//
// In exactly one .cpp file of the plugin:
//
//   VIGIL_PLUGIN("com.acme.rules", "1.2.0",
//                VIGIL_RULE(MyRule, "com.acme.rules.MyRule", "MyRule", "What MyRule detects"),
//                VIGIL_RULE(OtherRule, "com.acme.rules.OtherRule", "OtherRule", "..."));
//
// This defines the one exported symbol, extern "C" vigil_plugin_entry_v1, returning static data:
// the entry, the rule factory ("vigil.rule-factory/1") and one descriptor per rule, whose parameter
// specs come from each class's kParams. No dynamic initialization happens at load time.
//
// Every function the host calls is a noexcept trampoline that catches everything: an SMDebugError
// reports its own status and fields, std::bad_alloc VIGIL_E_OUT_OF_MEMORY, any other std::exception
// VIGIL_E_INTERNAL with what(), anything else VIGIL_E_INTERNAL "unknown exception". Nothing unwinds
// into the host. Build the plugin with vigil_add_rule_plugin() (cmake/VigilPlugin.cmake), which
// hides every other symbol.
#pragma once

#include <array>
#include <atomic>
#include <concepts>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "vigil/sdk/error.hpp"
#include "vigil/sdk/host.hpp"
#include "vigil/sdk/params.hpp"
#include "vigil/sdk/rule.hpp"
#include "vigil/sdk/trial.hpp"

namespace vigil::sdk::inline v1 {

namespace detail {

// ---- plugin-wide state ----
// One per plugin library. VIGIL_PLUGIN defines the object (in an anonymous namespace) and
// plugin_state(), which is declared hidden: no SDK global is ever exported or made GNU_UNIQUE, even
// in a plugin built without -fvisibility=hidden, so nothing pins the library in memory.
struct PluginState {
  std::atomic<const vigil_host_api*> host{nullptr};
  int init_count = 0;  // [loader] init/deinit are serialized (by the host)
  std::string path;
};

#if defined(__GNUC__)
#define VIGIL_SDK_HIDDEN __attribute__((visibility("hidden")))
#else
#define VIGIL_SDK_HIDDEN
#endif

VIGIL_SDK_HIDDEN PluginState& plugin_state() noexcept;  // defined by VIGIL_PLUGIN

// ---- filling the caller's vigil_error without allocating ----

[[nodiscard]] inline vigil_status report_raw(vigil_error* err, vigil_status code, const char* message) noexcept {
  write_error_record(err, ErrorRecord{.code = code, .message = message ? std::string_view(message) : std::string_view()});
  return code;
}

[[nodiscard]] inline vigil_status report(vigil_error* err, const Error& e) noexcept {
  if (e.code == VIGIL_OK)
    return report_raw(err, VIGIL_E_INTERNAL, "the rule reported an error with status VIGIL_OK");
  e.to_abi(err);
  return e.code;
}

// Runs `body` (returning Result<void>) and turns its Error, or anything it throws, into a status
// plus the caller's vigil_error.
template <class F>
[[nodiscard]] vigil_status guard(vigil_error* err, F&& body) noexcept {
#if defined(__cpp_exceptions)
  try {
#endif
    Result<void> r = std::forward<F>(body)();
    if (r) {
      write_error_ok(err);
      return VIGIL_OK;
    }
    return report(err, r.error());
#if defined(__cpp_exceptions)
  } catch (const SMDebugError& e) {
    return report(err, e.error());
  } catch (const std::bad_alloc&) {
    return report_raw(err, VIGIL_E_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    const char* what = e.what();
    return report_raw(err, VIGIL_E_INTERNAL, what ? what : "std::exception");
  } catch (...) {
    return report_raw(err, VIGIL_E_INTERNAL, "unknown exception");
  }
#endif
}

// ---- one rule instance behind a vigil_rule ----

struct RuleHandle {
  vigil_rule abi{};
  std::unique_ptr<Rule> rule;
};

inline Rule* rule_of(const vigil_rule* r) noexcept {
  if (!r || !r->rule_data) return nullptr;
  return static_cast<RuleHandle*>(r->rule_data)->rule.get();
}

inline void VIGIL_CALL rule_destroy(vigil_rule* r) noexcept {
  if (!r) return;
  auto* handle = static_cast<RuleHandle*>(r->rule_data);
  r->rule_data = nullptr;
  delete handle;  // destructors are noexcept: a throwing one terminates here, never in the host
}

[[nodiscard]] inline vigil_status VIGIL_CALL rule_required_tensors(vigil_rule* r, vigil_step step, const vigil_required_sink* sink,
                                                     vigil_error* err) noexcept {
  return guard(err, [&]() -> Result<void> {
    Rule* rule = rule_of(r);
    if (!rule) return fail(Error::invalid_argument("required_tensors: the rule is NULL or destroyed"));
    if (!sink) return fail(Error::invalid_argument("required_tensors: the sink is NULL"));
    RequiredTensors req(sink);
    return rule->required_tensors(step, req);
  });
}

[[nodiscard]] inline vigil_status VIGIL_CALL rule_invoke_at_step(vigil_rule* r, vigil_step step, bool* condition_met,
                                                   vigil_error* err) noexcept {
  if (condition_met) *condition_met = false;
  Rule* rule = rule_of(r);
  const vigil_status status = guard(err, [&]() -> Result<void> {
    if (!rule) return fail(Error::invalid_argument("invoke_at_step: the rule is NULL or destroyed"));
    if (!condition_met) return fail(Error::invalid_argument("invoke_at_step: condition_met is NULL"));
    auto met = rule->invoke_at_step(step);
    if (!met) return fail(std::move(met).error());
    *condition_met = *met;
    return {};
  });
  if (status == VIGIL_S_RULE_CONDITION_MET) {
    // RuleEvaluationConditionMet raised by the rule: met, and name the rule if it did not.
    if (condition_met) *condition_met = true;
    ErrorRecord record = read_error_record(status, err);
    if (rule && VIGIL_HAS_FIELD(err, vigil_error, rule) && record.rule.empty()) {
      record.rule = rule->rule_name();
      write_error_record(err, record);  // the record's other strings are views into err: copied onto themselves
    }
  }
  return status;
}

[[nodiscard]] inline vigil_status VIGIL_CALL rule_invoke_at_time(vigil_rule* r, double wall_time, vigil_step last_step,
                                                                bool* condition_met, vigil_error* err) noexcept {
  if (condition_met) *condition_met = false;
  return guard(err, [&]() -> Result<void> {
    Rule* rule = rule_of(r);
    if (!rule) return fail(Error::invalid_argument("invoke_at_time: the rule is NULL or destroyed"));
    if (!condition_met) return fail(Error::invalid_argument("invoke_at_time: condition_met is NULL"));
    auto met = rule->invoke_at_time(wall_time, last_step);
    if (!met) return fail(std::move(met).error());
    *condition_met = *met;
    return {};
  });
}

inline const void* VIGIL_CALL rule_get_extension(const vigil_rule* r, const char* id) noexcept {
  const Rule* rule = rule_of(r);
  return rule && id ? rule->get_extension(id) : nullptr;
}

// ---- per rule class ----

using CreateFn = vigil_status (*)(const vigil_rule_descriptor*, const vigil_rule_context*, vigil_rule**,
                                  vigil_error*) noexcept;
using InitFn = vigil_status (*)(const vigil_host_api*, const char*, vigil_error*) noexcept;
using DeinitFn = void (*)() noexcept;

template <class R>
constexpr bool overrides_required_tensors() {
  // A class that does not override it names the base's member; an inaccessible override counts as one.
  if constexpr (requires { &R::required_tensors; })
    return !std::is_same_v<decltype(&R::required_tensors), Result<void> (Rule::*)(vigil_step, RequiredTensors&)>;
  else return true;
}

template <class R>
constexpr bool overrides_invoke_at_time() {
  if constexpr (requires { &R::invoke_at_time; })
    return !std::is_same_v<decltype(&R::invoke_at_time), Result<bool> (Rule::*)(double, vigil_step)>;
  else return true;
}

template <class R>
[[nodiscard]] vigil_status create_rule(const vigil_rule_descriptor* desc, const vigil_rule_context* ctx, vigil_rule** out,
                         vigil_error* err) noexcept {
  if (out) *out = nullptr;
  return guard(err, [&]() -> Result<void> {
    if (!out) return fail(Error::invalid_argument("create: out is NULL"));
    if (!ctx) return fail(Error::invalid_argument("create: the rule context is NULL"));
#define VIGIL_SDK_CTX_HAS(field) VIGIL_HAS_FIELD(ctx, vigil_rule_context, field)
    RuleContext rc;
    rc.host = Host(VIGIL_SDK_CTX_HAS(host) ? ctx->host : nullptr);
    if (!rc.host) return fail(Error::invalid_argument("create: the rule context has no host table"));
    rc.session = VIGIL_SDK_CTX_HAS(session) ? ctx->session : nullptr;
    const uint32_t trial_count = VIGIL_SDK_CTX_HAS(trial_count) ? ctx->trial_count : 0;
    vigil_trial* const* trials = VIGIL_SDK_CTX_HAS(trials) ? ctx->trials : nullptr;
    // Profiler rules (profiler.hpp) read the job's profiler data through the host extension and get
    // no tensor trial; every other rule needs its base trial.
    constexpr bool needs_trial = !requires { R::kReadsProfilerData; };
    if (needs_trial && (trial_count == 0 || !trials))
      return fail(Error::invalid_argument("create: the rule context has no base trial"));
    if (trial_count > 0 && !trials) return fail(Error::invalid_argument("create: the rule context's trials are NULL"));
    rc.trials.reserve(trial_count);
    for (uint32_t i = 0; i < trial_count; ++i) {
      if (!trials[i]) return fail(Error::invalid_argument(fmt::format("create: trial {} is NULL", i)));
      rc.trials.emplace_back(rc.host, trials[i], i);
    }
    const uint32_t param_count = VIGIL_SDK_CTX_HAS(param_count) ? ctx->param_count : 0;
    const vigil_param_value* values = VIGIL_SDK_CTX_HAS(params) ? ctx->params : nullptr;
    const char* instance = VIGIL_SDK_CTX_HAS(instance_name) ? ctx->instance_name : nullptr;
    const std::span<const vigil_param_spec> specs =
        desc && desc->params ? std::span<const vigil_param_spec>(desc->params, desc->param_count)
                             : std::span<const vigil_param_spec>();
    auto params = Params::from_abi(specs, values, param_count);
    if (!params) return fail(std::move(params).error());
    rc.params = std::move(*params);
#if VIGIL_ABI_MINOR >= 1
    // ABI 1.1: undeclared parameters, passed only to rules flagged VIGIL_RULEF_EXTRA_PARAMS and only by
    // hosts whose context has the fields.
    if (VIGIL_SDK_CTX_HAS(extra_param_count) && ctx->extra_param_count > 0)
      VIGIL_TRY_VOID(rc.params.set_extra_from_abi(ctx->extra_param_names, ctx->extra_param_values,
                                                  ctx->extra_param_count));
#endif
#undef VIGIL_SDK_CTX_HAS
    rc.instance_name = instance ? instance : "";
    rc.rule_name = desc && desc->name ? desc->name : "";
    rc.rule_id = desc && desc->id ? desc->id : "";

    auto handle = std::make_unique<RuleHandle>();
    if constexpr (requires(RuleContext c) { R::create(std::move(c)); }) {
      auto made = R::create(std::move(rc));
      if (!made) return fail(std::move(made).error());
      if (!*made) return fail(Error::internal("the rule's create() returned a null rule"));
      handle->rule = std::move(*made);
    } else {
      static_assert(std::is_constructible_v<R, RuleContext>,
                    "a rule class needs a constructor taking vigil::sdk::RuleContext, or a static "
                    "Result<std::unique_ptr<R>> create(vigil::sdk::RuleContext)");
      handle->rule = std::make_unique<R>(std::move(rc));
    }
    handle->abi.struct_size = sizeof(vigil_rule);
    handle->abi.rule_data = handle.get();
    handle->abi.destroy = &rule_destroy;
    handle->abi.required_tensors = overrides_required_tensors<R>() ? &rule_required_tensors : nullptr;
    handle->abi.invoke_at_step = &rule_invoke_at_step;
    handle->abi.get_extension = &rule_get_extension;
    // ABI 1.2: only rules that judge time get the wall-clock tick (a 1.1 host never reads the slot).
    handle->abi.invoke_at_time = overrides_invoke_at_time<R>() ? &rule_invoke_at_time : nullptr;
    *out = &handle.release()->abi;
    return {};
  });
}

template <class R>
[[nodiscard]] vigil_status rule_class_init(const vigil_host_api* host, const char* path, vigil_error* err) noexcept {
  return guard(err, [&]() -> Result<void> {
    const std::string_view p = path ? std::string_view(path) : std::string_view();
    if constexpr (std::is_void_v<decltype(R::on_plugin_init(Host(host), p))>) {
      R::on_plugin_init(Host(host), p);
      return {};
    } else {
      return R::on_plugin_init(Host(host), p);
    }
  });
}

template <class R>
void rule_class_deinit() noexcept {
  R::on_plugin_deinit();
}

// What the factory needs about one rule at run time (no pointer into the rule class's own data).
struct RuleRecord {
  const char* id;
  const char* name;
  const char* description;
  const char* version;  // nullptr: the plugin's version
  uint32_t param_count;
  uint32_t profile_default_count;  // parameters with a calibrated(...) default
  uint32_t flags;
  CreateFn create;
  InitFn init;      // R::on_plugin_init, or nullptr
  DeinitFn deinit;  // R::on_plugin_deinit, or nullptr
};

inline void rule_id_must_be_non_empty() {}
inline void rule_name_must_be_non_empty() {}
inline void rule_ids_must_be_unique() {}
inline void rule_names_must_be_unique() {}
inline void plugin_id_must_be_non_empty() {}
inline void plugin_version_must_be_non_empty() {}

// What VIGIL_RULE(Class, id, name, description) produces: the class as a type plus its names.
template <class R>
struct RuleDef {
  using rule_type = R;
  static_assert(std::is_base_of_v<Rule, R>, "VIGIL_RULE: the class must derive from vigil::sdk::Rule");
  static_assert(!std::is_abstract_v<R>, "VIGIL_RULE: the class must implement invoke_at_step");
  static_assert(check_params(rule_params<R>()), "VIGIL_RULE: invalid kParams");

  const char* id;
  const char* name;
  const char* description;

  consteval RuleDef(const char* id_, const char* name_, const char* description_)
      : id(id_), name(name_), description(description_) {
    if (!id || !*id) rule_id_must_be_non_empty();
    if (!name || !*name) rule_name_must_be_non_empty();
  }

  static constexpr std::span<const ParamSpec> params() noexcept { return rule_params<R>(); }

  constexpr RuleRecord record() const noexcept {
    uint32_t calibrated = 0;
    for (const ParamSpec& p : params()) calibrated += p.calibrated_default() != nullptr;
    RuleRecord r{id,      name,    description, nullptr, static_cast<uint32_t>(params().size()), calibrated, 0u,
                 &create_rule<R>, nullptr, nullptr};
    if constexpr (requires { R::kVersion; }) r.version = R::kVersion;
    if constexpr (requires { R::kFlags; }) r.flags = static_cast<uint32_t>(R::kFlags);
    if constexpr (requires { R::on_plugin_init(Host(), std::string_view()); }) r.init = &rule_class_init<R>;
    if constexpr (requires { R::on_plugin_deinit(); }) r.deinit = &rule_class_deinit<R>;
    return r;
  }
};

struct PluginInfo {
  const char* id;
  const char* version;
  uint32_t flags;
};

template <class... Defs>
constexpr std::array<RuleRecord, sizeof...(Defs)> make_records(const std::tuple<Defs...>& defs) noexcept {
  return std::apply([](const Defs&... d) { return std::array<RuleRecord, sizeof...(Defs)>{d.record()...}; }, defs);
}

template <class... Defs>
constexpr size_t total_params(const std::tuple<Defs...>&) noexcept {
  return (size_t{0} + ... + Defs::params().size());
}

// Every rule's vigil_param_spec entries, one rule after the other.
template <size_t N, class... Defs>
constexpr std::array<vigil_param_spec, N> make_param_table(const std::tuple<Defs...>&) noexcept {
  std::array<vigil_param_spec, N> table{};
  size_t k = 0;
  ((
       [&] {
         for (const ParamSpec& p : Defs::params()) table[k++] = p.spec();
       }()),
   ...);
  return table;
}

template <class... Defs>
constexpr size_t total_profile_defaults(const std::tuple<Defs...>&) noexcept {
  size_t n = 0;
  ((
       [&] {
         for (const ParamSpec& p : Defs::params()) n += p.calibrated_default() != nullptr;
       }()),
   ...);
  return n;
}

// Every rule's calibrated defaults (ABI 1.2), one rule after the other.
template <size_t N, class... Defs>
constexpr std::array<vigil_profile_default, N> make_profile_table(const std::tuple<Defs...>&) noexcept {
  std::array<vigil_profile_default, N> table{};
  size_t k = 0;
  ((
       [&] {
         for (const ParamSpec& p : Defs::params())
           if (p.calibrated_default())
             table[k++] = vigil_profile_default{sizeof(vigil_profile_default), VIGIL_PROFILE_CALIBRATED,
                                                p.spec().name, p.calibrated_default()};
       }()),
   ...);
  return table;
}

template <size_t N>
consteval bool check_plugin(const PluginInfo& info, const std::array<RuleRecord, N>& rules) {
  if (!info.id || !*info.id) plugin_id_must_be_non_empty();
  if (!info.version || !*info.version) plugin_version_must_be_non_empty();
  for (size_t i = 0; i < N; ++i)
    for (size_t j = 0; j < i; ++j) {
      if (std::string_view(rules[i].id) == rules[j].id) rule_ids_must_be_unique();
      if (std::string_view(rules[i].name) == rules[j].name) rule_names_must_be_unique();
    }
  return true;
}

template <size_t N, size_t P, size_t D>
constexpr std::array<vigil_rule_descriptor, N> make_descriptors(const PluginInfo& info,
                                                                const std::array<RuleRecord, N>& rules,
                                                                const std::array<vigil_param_spec, P>& params,
                                                                const std::array<vigil_profile_default, D>& profile) noexcept {
  std::array<vigil_rule_descriptor, N> out{};
  size_t offset = 0, profile_offset = 0;
  for (size_t i = 0; i < N; ++i) {
    out[i].struct_size = sizeof(vigil_rule_descriptor);
    out[i].id = rules[i].id;
    out[i].name = rules[i].name;
    out[i].version = rules[i].version ? rules[i].version : info.version;
    out[i].description = rules[i].description;
    out[i].params = rules[i].param_count ? params.data() + offset : nullptr;
    out[i].param_count = rules[i].param_count;
    out[i].flags = rules[i].flags;
    out[i].profile_defaults = rules[i].profile_default_count ? profile.data() + profile_offset : nullptr;
    out[i].profile_default_count = rules[i].profile_default_count;
    offset += rules[i].param_count;
    profile_offset += rules[i].profile_default_count;
  }
  return out;
}

// The static plugin: entry, factory, descriptors, parameter specs and the plugin-level trampolines.
// Its template arguments live in an anonymous namespace, so all of this has internal linkage.
template <const PluginInfo& Info, const auto& Defs>
struct Plugin {
  static constexpr auto records = make_records(Defs);
  static constexpr size_t kCount = records.size();
  static_assert(kCount > 0, "VIGIL_PLUGIN needs at least one VIGIL_RULE(...)");
  static_assert(check_plugin(Info, records));
  static constexpr size_t kParamCount = total_params(Defs);
  static constexpr std::array<vigil_param_spec, kParamCount> params = make_param_table<kParamCount>(Defs);
  static constexpr size_t kProfileDefaultCount = total_profile_defaults(Defs);
  static constexpr std::array<vigil_profile_default, kProfileDefaultCount> profile_defaults =
      make_profile_table<kProfileDefaultCount>(Defs);
  static constexpr std::array<vigil_rule_descriptor, kCount> descriptors =
      make_descriptors(Info, records, params, profile_defaults);

  static uint32_t VIGIL_CALL count(const vigil_rule_factory*) noexcept { return static_cast<uint32_t>(kCount); }

  static const vigil_rule_descriptor* VIGIL_CALL descriptor(const vigil_rule_factory*, uint32_t index) noexcept {
    return index < kCount ? &descriptors[index] : nullptr;
  }

  [[nodiscard]] static vigil_status VIGIL_CALL create(const vigil_rule_factory*, const char* rule_id,
                                        const vigil_rule_context* context, vigil_rule** out,
                                        vigil_error* err) noexcept {
    if (out) *out = nullptr;
    if (rule_id)
      for (size_t i = 0; i < kCount; ++i)
        if (std::strcmp(records[i].id, rule_id) == 0) return records[i].create(&descriptors[i], context, out, err);
    return guard(err, [&]() -> Result<void> {
      return fail(Error::invalid_argument(
          fmt::format("plugin {} has no rule {}", Info.id, rule_id ? rule_id : "(NULL)")));
    });
  }

  static constexpr vigil_rule_factory factory{sizeof(vigil_rule_factory), &count, &descriptor, &create};

  // [loader] The host calls it once per load (plugin.h); counting the calls keeps a host that calls
  // it again harmless: the first call checks the host and runs the rule classes' on_plugin_init
  // hooks, later calls only count.
  [[nodiscard]] static vigil_status VIGIL_CALL init(const vigil_host_api* host, const char* plugin_path, vigil_error* err) noexcept {
    PluginState& state = plugin_state();
    const vigil_status checked = guard(err, [&]() -> Result<void> {
      if (!host) return fail(Error::invalid_argument("init: the host table is NULL"));
      if (!VIGIL_HAS_FIELD(host, vigil_host_api, abi))
        return fail(Error::make(VIGIL_E_VERSION_MISMATCH, "init: the host table is too small"));
      if (host->abi.major != VIGIL_ABI_MAJOR)
        return fail(Error::make(VIGIL_E_VERSION_MISMATCH,
                                fmt::format("plugin {} speaks the rule-plugin ABI {}.{}, the host {}.{}", Info.id,
                                            VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR, host->abi.major, host->abi.minor)));
      if (state.init_count == 0) state.path = plugin_path ? plugin_path : "";
      return {};
    });
    if (checked != VIGIL_OK) return checked;
    if (state.init_count > 0) {
      ++state.init_count;
      return VIGIL_OK;
    }
    state.host.store(host);
    for (size_t i = 0; i < kCount; ++i) {
      if (!records[i].init) continue;
      const vigil_status s = records[i].init(host, plugin_path, err);
      if (s != VIGIL_OK) {
        for (size_t j = i; j-- > 0;)
          if (records[j].deinit) records[j].deinit();
        state.host.store(nullptr);
        return s;
      }
    }
    state.init_count = 1;
    return VIGIL_OK;
  }

  // [loader] The last matching call runs the on_plugin_deinit hooks (in reverse) and forgets the host.
  static void VIGIL_CALL deinit() noexcept {
    PluginState& state = plugin_state();
    if (state.init_count <= 0) return;  // deinit without init: nothing to undo
    if (--state.init_count > 0) return;
    for (size_t j = kCount; j-- > 0;)
      if (records[j].deinit) records[j].deinit();
    state.host.store(nullptr);
  }

  static const void* VIGIL_CALL get_factory(const char* factory_id) noexcept {
    return factory_id && std::strcmp(factory_id, VIGIL_RULE_FACTORY_ID) == 0 ? &factory : nullptr;
  }

  static constexpr vigil_plugin_entry entry{
      sizeof(vigil_plugin_entry), kAbiVersion, Info.flags, Info.id, Info.version, VIGIL_SDK_BUILD_INFO,
      &init,                      &deinit,     &get_factory,
  };
};

}  // namespace detail

// The host table the plugin was initialized with (empty before init and after the last deinit).
// Needs VIGIL_PLUGIN(...) somewhere in the plugin.
inline Host plugin_host() noexcept { return Host(detail::plugin_state().host.load()); }
// The plugin_path the host passed to init.
inline std::string_view plugin_path() noexcept { return detail::plugin_state().path; }

}  // namespace vigil::sdk::inline v1

// VIGIL_RULE(Class, id, name, description): one rule of the plugin. `id` is unique and reverse-DNS
// ("com.acme.rules.MyRule"), `name` is the rule_to_invoke value ("MyRule").
#define VIGIL_RULE(Class, id, name, description) ::vigil::sdk::detail::RuleDef<Class>(id, name, description)

// VIGIL_PLUGIN(plugin_id, plugin_version, VIGIL_RULE(...), ...); once per plugin, at global scope.
#define VIGIL_PLUGIN(plugin_id, plugin_version, ...) \
  VIGIL_PLUGIN_WITH_FLAGS(plugin_id, plugin_version, 0u, __VA_ARGS__)

// The same with VIGIL_PLUGINF_* flags (VIGIL_PLUGINF_NO_UNLOAD, VIGIL_PLUGINF_NOT_FORK_SAFE).
#define VIGIL_PLUGIN_WITH_FLAGS(plugin_id, plugin_version, plugin_flags, ...)                                  \
  namespace {                                                                                                  \
  constexpr ::vigil::sdk::detail::PluginInfo vigil_sdk_plugin_info_{plugin_id, plugin_version, (plugin_flags)}; \
  constexpr auto vigil_sdk_plugin_rules_ = ::std::make_tuple(__VA_ARGS__);                                     \
  using vigil_sdk_plugin_ = ::vigil::sdk::detail::Plugin<vigil_sdk_plugin_info_, vigil_sdk_plugin_rules_>;     \
  ::vigil::sdk::detail::PluginState vigil_sdk_plugin_state_;                                                   \
  }                                                                                                            \
  VIGIL_SDK_HIDDEN ::vigil::sdk::detail::PluginState& ::vigil::sdk::detail::plugin_state() noexcept {          \
    return vigil_sdk_plugin_state_;                                                                            \
  }                                                                                                            \
  /* Declines a host of another ABI major (version.h): before init, with nothing to undo. */                \
  extern "C" VIGIL_EXPORT const vigil_plugin_entry* VIGIL_CALL vigil_plugin_entry_v1(uint32_t host_major,      \
                                                                                     uint32_t) {               \
    return host_major == VIGIL_ABI_MAJOR ? &vigil_sdk_plugin_::entry : nullptr;                                \
  }                                                                                                            \
  static_assert(true, "")
