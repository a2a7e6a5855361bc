// Purpose-built plugins for the loader and evaluator tests, written against the raw C ABI (no SDK)
// so that they can misbehave in every way the host must contain. One source, many libraries: the
// VARIANT macro picks what this build does wrong (0 = a well-behaved plugin with test rules).
// The "misbehaves" variant has rules that take their whole process down (for `vigil evaluate
// --isolate`): a segfault, abort(), exit(7), a call that never returns, unbounded allocation.
// The "probes_extensions" variant asks for host extensions in init and reports every init and
// deinit call to the test-only probe extension when the host offers it. The "not_fork_safe" variant
// is flagged VIGIL_PLUGINF_NOT_FORK_SAFE and ends, with status 86, any child forked from a process
// that initialised it. The "prepares" variant offers a rule preparer (ABI 1.4): its StepsRule refuses
// to be created unless its configuration was prepared first, and a configuration named
// "fail-prepare..." fails its preparation (the rule is still created). The "sloppy_old_minor"
// variant is built for ABI 1.3 and its get_factory hands back its factory whatever the id asked.
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vigil/vigil.h>

#include "test_probe_extension.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#define VARIANT_GOOD 0
#define VARIANT_NO_ENTRY 1
#define VARIANT_ABI_MAJOR_2 2
#define VARIANT_DECLINES_HOST 3
#define VARIANT_INIT_FAILS 4
#define VARIANT_NEEDS_NEWER_MINOR 5
#define VARIANT_BAD_DESCRIPTOR 6
#define VARIANT_DUPLICATE_ID 7
#define VARIANT_BAD_PARAM_DEFAULT 8
#define VARIANT_THROW_IN_ENTRY 9
#define VARIANT_THROW_IN_INIT 10
#define VARIANT_THROW_IN_GET_FACTORY 11
#define VARIANT_THROW_IN_COUNT 12
#define VARIANT_THROW_IN_DESCRIPTOR 13
#define VARIANT_THROW_IN_CREATE 14
#define VARIANT_THROW_IN_REQUIRED 15
#define VARIANT_THROW_IN_INVOKE 16
#define VARIANT_THROW_IN_DESTROY 17
#define VARIANT_THROW_IN_DEINIT 18
#define VARIANT_MISBEHAVES 19
#define VARIANT_PROBES_EXTENSIONS 20
#define VARIANT_NOT_FORK_SAFE 21
#define VARIANT_PREPARES 22
#define VARIANT_SLOPPY_OLD_MINOR 23

#ifndef VARIANT
#error "define VARIANT"
#endif

namespace {

const vigil_host_api* g_host = nullptr;
[[maybe_unused]] const vigil_test_probe_ext* g_probe = nullptr;

[[noreturn, maybe_unused]] void deliberate_throw(const char* where) { throw std::runtime_error(std::string("deliberate throw in ") + where); }

void set_error(vigil_error* err, vigil_status code, const std::string& message, uint32_t flags = 0) {
  if (!err || err->struct_size < sizeof(vigil_error)) return;
  err->code = code;
  err->flags = flags;
  std::snprintf(err->message, sizeof(err->message), "%s", message.c_str());
}

// ---- the rules ----

enum RuleKind { kStepsRule, kUnknownStatus, kLeaksView, kThrower, kValidated, kMisbehave };

struct TestRule {
  vigil_rule base;
  RuleKind kind;
  vigil_trial* trial;
  vigil_session* session;
  std::set<int64_t> fire_at;
  int64_t fail_at = -1;
  int64_t end_at = -1;
  std::string how;  // Misbehave
  int64_t at_step = 0;
};

// What Misbehave does at its step. Only what ends or stalls the whole process: the host contains
// everything else in-process.
vigil_status misbehave(const std::string& how, vigil_error* err) {
  if (how == "segfault") {
    // A store to a page mapped without access: a real SIGSEGV, not undefined behaviour that a
    // compiler or UBSan could turn into something else.
    void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *static_cast<volatile int*>(page) = 1;
  } else if (how == "abort") {
    std::abort();
  } else if (how == "exit") {
    std::exit(7);
  } else if (how == "hang") {
    while (true) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // sleeps: spares the CPU
  } else if (how == "hog") {
    // Touches every byte, so resident memory grows. Gives up at 2 GiB so that a broken memory
    // limit fails the test instead of the machine.
    constexpr size_t kChunk = size_t(16) << 20, kGiveUp = size_t(2) << 30;
    std::vector<std::unique_ptr<char[]>> kept;
    for (size_t total = 0; total < kGiveUp; total += kChunk) {
      kept.emplace_back(new char[kChunk]);
      std::memset(kept.back().get(), 1, kChunk);
    }
    set_error(err, VIGIL_E_INTERNAL, "allocated 2 GiB and was not stopped");
    return VIGIL_E_INTERNAL;
  }
  set_error(err, VIGIL_E_INTERNAL, "the process was not taken down by '" + how + "'");
  return VIGIL_E_INTERNAL;
}

void destroy_rule(vigil_rule* r) {
#if VARIANT == VARIANT_THROW_IN_DESTROY
  deliberate_throw("destroy");
#endif
  delete static_cast<TestRule*>(r->rule_data);
}

vigil_status required_tensors(vigil_rule* r, vigil_step step, const vigil_required_sink* sink, vigil_error* err) {
#if VARIANT == VARIANT_THROW_IN_REQUIRED
  deliberate_throw("required_tensors");
#endif
  (void)r;
  (void)err;
  const vigil_step steps[] = {step};
  return sink->add(sink->ctx, 0, ".*", true, steps, 1);
}

vigil_status first_tensor(TestRule* self, std::string& name) {
  vigil_str_sink sink{&name, [](void* ctx, const char* s, size_t n) -> vigil_status {
                        auto* out = static_cast<std::string*>(ctx);
                        if (out->empty()) out->assign(s, n);
                        return VIGIL_OK;
                      }};
  vigil_name_query q{};
  q.struct_size = sizeof(q);
  return g_host->tensor_names(self->trial, &q, sink, nullptr);
}

vigil_status invoke_at_step(vigil_rule* r, vigil_step step, bool* met, vigil_error* err) {
#if VARIANT == VARIANT_THROW_IN_INVOKE
  deliberate_throw("invoke_at_step");
#endif
  auto* self = static_cast<TestRule*>(r->rule_data);
  *met = false;
  switch (self->kind) {
    case kStepsRule:
      if (step == self->fail_at) {
        set_error(err, VIGIL_E_INTERNAL, "deliberate failure at step " + std::to_string(step));
        return VIGIL_E_INTERNAL;
      }
      if (self->fire_at.contains(step)) {
        std::string evidence = "{\"step\": " + std::to_string(step) + "}";
        g_host->report_evidence(self->session, evidence.c_str(), nullptr);
        *met = true;
      }
      if (step == self->end_at) {
        set_error(err, VIGIL_S_RULE_CONDITION_MET, "end of rule", VIGIL_ERRF_END_OF_RULE);
        return VIGIL_S_RULE_CONDITION_MET;
      }
      return VIGIL_OK;
    case kUnknownStatus: return 4242;
    case kLeaksView: {
      std::string name;
      if (vigil_status st = first_tensor(self, name); st != VIGIL_OK || name.empty()) return st;
      vigil_tensor_key key{sizeof(key), name.c_str(), step, VIGIL_MODE_GLOBAL, nullptr};
      vigil_tensor* view = nullptr;
      return g_host->tensor_value(self->trial, &key, &view, err);  // never released: the host must notice
    }
    case kThrower: throw std::logic_error("a rule that throws across the C ABI");
    case kValidated: return VIGIL_OK;
    case kMisbehave: return step == self->at_step ? misbehave(self->how, err) : VIGIL_OK;
  }
  return VIGIL_OK;
}

// ---- descriptors ----

const vigil_param_spec kStepsParams[] = {
    {sizeof(vigil_param_spec), "fire_at", VIGIL_PARAM_STRING_LIST, 0, "", NAN, NAN, nullptr, "steps where the condition is met"},
    {sizeof(vigil_param_spec), "fail_at", VIGIL_PARAM_INT64, 0, "-1", NAN, NAN, nullptr, "step where the rule fails"},
    {sizeof(vigil_param_spec), "end_at", VIGIL_PARAM_INT64, 0, "-1", NAN, NAN, nullptr, "step where the rule ends (end_of_rule)"},
};

const char* const kModes[] = {"TRAIN", "EVAL", nullptr};
const vigil_param_spec kValidatedParams[] = {
    {sizeof(vigil_param_spec), "ratio", VIGIL_PARAM_DOUBLE, 0, "0.5", 0.0, 1.0, nullptr, "between 0 and 1"},
    {sizeof(vigil_param_spec), "count", VIGIL_PARAM_INT64, 0, "3", 1.0, NAN, nullptr, "at least 1"},
    {sizeof(vigil_param_spec), "flag", VIGIL_PARAM_BOOL, 0, "False", NAN, NAN, nullptr, "a boolean"},
    {sizeof(vigil_param_spec), "mode", VIGIL_PARAM_ENUM, 0, "TRAIN", NAN, NAN, kModes, "TRAIN or EVAL"},
    {sizeof(vigil_param_spec), "pattern", VIGIL_PARAM_REGEX, 0, ".*", NAN, NAN, nullptr, "a regex"},
    {sizeof(vigil_param_spec), "needed", VIGIL_PARAM_STRING, VIGIL_PARAMF_REQUIRED, nullptr, NAN, NAN, nullptr, "required"},
#if VARIANT == VARIANT_BAD_PARAM_DEFAULT
    {sizeof(vigil_param_spec), "broken", VIGIL_PARAM_DOUBLE, 0, "abc", NAN, NAN, nullptr, "a default that is no number"},
#endif
};

#if VARIANT == VARIANT_DUPLICATE_ID
#define ID_PREFIX "vigil.test.dup."
#elif VARIANT == VARIANT_MISBEHAVES
#define ID_PREFIX "vigil.test.misbehaves."
#elif VARIANT == VARIANT_PROBES_EXTENSIONS
#define ID_PREFIX "vigil.test.probes."
#else
#define ID_PREFIX "vigil.test."
#endif

#if VARIANT == VARIANT_MISBEHAVES
const char* const kHows[] = {"segfault", "abort", "exit", "hang", "hog", nullptr};
const vigil_param_spec kMisbehaveParams[] = {
    {sizeof(vigil_param_spec), "how", VIGIL_PARAM_ENUM, VIGIL_PARAMF_REQUIRED, nullptr, NAN, NAN, kHows,
     "segfault, abort, exit (status 7), hang (never return) or hog (allocate without end)"},
    {sizeof(vigil_param_spec), "at_step", VIGIL_PARAM_INT64, 0, "0", NAN, NAN, nullptr, "the step where it happens"},
};
// Its own StepsRule (under another name) shares the misbehaving rule's process.
const vigil_rule_descriptor kRules[] = {
    {sizeof(vigil_rule_descriptor), ID_PREFIX "StepsRule", "SiblingStepsRule", "1.0",
     "StepsRule, in the misbehaving plugin", kStepsParams, 3, 0},
    {sizeof(vigil_rule_descriptor), ID_PREFIX "Misbehave", "Misbehave", "1.0", "takes its process down at at_step",
     kMisbehaveParams, 2, 0},
};
#else
const vigil_rule_descriptor kRules[] = {
    {sizeof(vigil_rule_descriptor), ID_PREFIX "StepsRule", VARIANT == VARIANT_BAD_DESCRIPTOR ? nullptr : "StepsRule",
     "1.0", "met at the steps listed in fire_at", kStepsParams, 3, 0},
    {sizeof(vigil_rule_descriptor), ID_PREFIX "UnknownStatus", "UnknownStatus", "1.0", "returns status 4242", nullptr, 0, 0},
    {sizeof(vigil_rule_descriptor), ID_PREFIX "LeaksView", "LeaksView", "1.0", "keeps a tensor view", nullptr, 0, 0},
    {sizeof(vigil_rule_descriptor), ID_PREFIX "Thrower", "Thrower", "1.0", "throws from invoke_at_step", nullptr, 0, 0},
    {sizeof(vigil_rule_descriptor), ID_PREFIX "Validated", "Validated", "1.0", "typed parameters",
     kValidatedParams, sizeof(kValidatedParams) / sizeof(kValidatedParams[0]), VIGIL_RULEF_MULTI_TRIAL},
};
#endif
constexpr uint32_t kRuleCount = sizeof(kRules) / sizeof(kRules[0]);

uint32_t factory_count(const vigil_rule_factory*) {
#if VARIANT == VARIANT_THROW_IN_COUNT
  deliberate_throw("count");
#endif
  return kRuleCount;
}

const vigil_rule_descriptor* factory_descriptor(const vigil_rule_factory*, uint32_t i) {
#if VARIANT == VARIANT_THROW_IN_DESCRIPTOR
  deliberate_throw("descriptor");
#endif
  return i < kRuleCount ? &kRules[i] : nullptr;
}

#if VARIANT == VARIANT_PREPARES
std::mutex g_prepared_mu;
std::set<std::string> g_prepared;  // the configurations whose preparation returned

bool was_prepared(const char* instance_name) {
  std::lock_guard lock(g_prepared_mu);
  return instance_name && g_prepared.contains(instance_name);
}

vigil_status preparer_prepare(const vigil_rule_preparer*, const char*, const vigil_prepare_context* ctx,
                              vigil_error* err) {
  const std::string name = ctx && ctx->instance_name ? ctx->instance_name : "";
  {
    std::lock_guard lock(g_prepared_mu);
    g_prepared.insert(name);
  }
  if (name.starts_with("fail-prepare")) {
    set_error(err, VIGIL_E_INTERNAL, "deliberate prepare failure");
    return VIGIL_E_INTERNAL;
  }
  return VIGIL_OK;
}

const vigil_rule_preparer kPreparer = {sizeof(vigil_rule_preparer), preparer_prepare};
#endif

vigil_status factory_create(const vigil_rule_factory*, const char* rule_id, const vigil_rule_context* ctx,
                            vigil_rule** out, vigil_error* err) {
#if VARIANT == VARIANT_THROW_IN_CREATE
  deliberate_throw("create");
#endif
  auto* self = new TestRule{};
  self->base.struct_size = sizeof(vigil_rule);
  self->base.rule_data = self;
  self->base.destroy = destroy_rule;
  self->base.invoke_at_step = invoke_at_step;
  self->base.required_tensors = required_tensors;
  self->trial = ctx->trials[0];
  self->session = ctx->session;
  const std::string id = rule_id;
  const std::string name = id.substr(id.rfind('.') + 1);
#if VARIANT == VARIANT_PREPARES
  if (!was_prepared(ctx->instance_name)) {
    delete self;
    set_error(err, VIGIL_E_INTERNAL, std::string("created before it was prepared: ") + ctx->instance_name);
    return VIGIL_E_INTERNAL;
  }
#endif
  if (name == "StepsRule") {
    self->kind = kStepsRule;
    for (size_t i = 0; i < ctx->params[0].list_count; ++i) self->fire_at.insert(std::stoll(ctx->params[0].list[i]));
    self->fail_at = ctx->params[1].v.i;
    self->end_at = ctx->params[2].v.i;
  } else if (name == "UnknownStatus") {
    self->kind = kUnknownStatus;
  } else if (name == "LeaksView") {
    self->kind = kLeaksView;
  } else if (name == "Thrower") {
    self->kind = kThrower;
  } else if (name == "Validated") {
    self->kind = kValidated;
  } else if (name == "Misbehave") {
    self->kind = kMisbehave;
    self->how = ctx->params[0].v.s;
    self->at_step = ctx->params[1].v.i;
  } else {
    delete self;
    set_error(err, VIGIL_E_INVALID_ARGUMENT, "unknown rule " + id);
    return VIGIL_E_INVALID_ARGUMENT;
  }
  *out = &self->base;
  return VIGIL_OK;
}

const vigil_rule_factory kFactory = {sizeof(vigil_rule_factory), factory_count, factory_descriptor, factory_create};

vigil_status plugin_init(const vigil_host_api* host, const char*, vigil_error* err) {
#if VARIANT == VARIANT_THROW_IN_INIT
  deliberate_throw("init");
#endif
#if VARIANT == VARIANT_INIT_FAILS
  set_error(err, VIGIL_E_INTERNAL, "deliberate init failure");
  return VIGIL_E_INTERNAL;
#endif
#if VARIANT == VARIANT_NEEDS_NEWER_MINOR
  if (host->abi.minor < 7) {
    set_error(err, VIGIL_E_VERSION_MISMATCH, "this plugin needs host ABI 1.7 or newer");
    return VIGIL_E_VERSION_MISMATCH;
  }
#endif
#if VARIANT == VARIANT_NOT_FORK_SAFE
  // glibc drops the handler when the library is unloaded.
  pthread_atfork(nullptr, nullptr, [] { _exit(86); });
#endif
#if VARIANT == VARIANT_PROBES_EXTENSIONS
  // An extension the host lacks is NULL, and the plugin goes on without it.
  if (host->get_extension(host, VIGIL_TEST_MISSING_EXTENSION_ID) != nullptr) {
    set_error(err, VIGIL_E_INTERNAL, "the host offered an extension it cannot have");
    return VIGIL_E_INTERNAL;
  }
  g_probe = static_cast<const vigil_test_probe_ext*>(host->get_extension(host, VIGIL_TEST_PROBE_EXTENSION_ID));
  if (g_probe) g_probe->init_called("vigil.test.variant" VIGIL_TEST_VARIANT_NAME);
#endif
  (void)err;
  g_host = host;
  return VIGIL_OK;
}

void plugin_deinit() {
#if VARIANT == VARIANT_THROW_IN_DEINIT
  deliberate_throw("deinit");
#endif
#if VARIANT == VARIANT_PROBES_EXTENSIONS
  if (g_probe) g_probe->deinit_called("vigil.test.variant" VIGIL_TEST_VARIANT_NAME);
  g_probe = nullptr;
#endif
  g_host = nullptr;
}

const void* plugin_get_factory(const char* id) {
#if VARIANT == VARIANT_THROW_IN_GET_FACTORY
  deliberate_throw("get_factory");
#endif
#if VARIANT == VARIANT_SLOPPY_OLD_MINOR
  (void)id;
  return &kFactory;  // whatever was asked: what an ABI 1.3 plugin could do, never asked for anything else
#else
#if VARIANT == VARIANT_PREPARES
  if (std::strcmp(id, VIGIL_RULE_PREPARER_ID) == 0) return &kPreparer;
#endif
  return std::strcmp(id, VIGIL_RULE_FACTORY_ID) == 0 ? &kFactory : nullptr;
#endif
}

const vigil_plugin_entry kEntry = {
    sizeof(vigil_plugin_entry),
    {VARIANT == VARIANT_ABI_MAJOR_2 ? uint16_t(2) : uint16_t(VIGIL_ABI_MAJOR),
     VARIANT == VARIANT_SLOPPY_OLD_MINOR ? uint16_t(3) : uint16_t(VIGIL_ABI_MINOR), 0},
    VARIANT == VARIANT_NOT_FORK_SAFE ? uint32_t{VIGIL_PLUGINF_NOT_FORK_SAFE} : 0u,
    "vigil.test.variant" VIGIL_TEST_VARIANT_NAME,
    "1.0",
    "test plugin",
    plugin_init,
    plugin_deinit,
    plugin_get_factory,
};

}  // namespace

#if VARIANT == VARIANT_NO_ENTRY
extern "C" VIGIL_EXPORT const vigil_plugin_entry* some_other_symbol() { return &kEntry; }
#else
extern "C" VIGIL_EXPORT const vigil_plugin_entry* vigil_plugin_entry_v1(uint32_t, uint32_t) {
#if VARIANT == VARIANT_THROW_IN_ENTRY
  deliberate_throw("the entry function");
#endif
#if VARIANT == VARIANT_DECLINES_HOST
  return nullptr;
#else
  return &kEntry;
#endif
}
#endif
