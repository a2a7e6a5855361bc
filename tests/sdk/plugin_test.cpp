// VIGIL_PLUGIN / VIGIL_RULE and the trampolines, driven through the C entry point like a host would.
#include <gtest/gtest.h>
#include <vigil/sdk.hpp>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fake_host.hpp"

namespace sdk = vigil::sdk;

namespace {

// ---- rules under test ----

// Fails in the way its "what" parameter names.
class Thrower final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {sdk::param_string("what", "none", "How to fail")};
  explicit Thrower(sdk::RuleContext ctx) : Rule(std::move(ctx)), what_(params().get_string("what")) {}

  sdk::Result<bool> invoke_at_step(vigil_step step) override {
    const std::string& w = what_;
    if (w == "none") return false;
    if (w == "met") return true;
    if (w == "tensor_unavailable_for_step") throw sdk::TensorUnavailableForStep("t", step, VIGIL_MODE_TRAIN, true);
    if (w == "tensor_unavailable") throw sdk::TensorUnavailable("t");
    if (w == "step_unavailable") throw sdk::StepUnavailable(step, VIGIL_MODE_EVAL);
    if (w == "step_not_yet_available") throw sdk::StepNotYetAvailable(step);
    if (w == "no_more_data") throw sdk::NoMoreData(step, VIGIL_MODE_GLOBAL, step - 1);
    if (w == "index_reader") throw sdk::IndexReaderException("Invalid File Found: x");
    if (w == "invalid_worker") throw sdk::InvalidWorker("w3");
    if (w == "shape_unavailable") throw sdk::ShapeUnavailableForStep("t", step);
    if (w == "condition_met") throw sdk::RuleEvaluationConditionMet("Thrower", step);
    if (w == "condition_met_end") throw sdk::RuleEvaluationConditionMet("", step, true);
    if (w == "insufficient") throw sdk::InsufficientInformationForRuleInvocation("Thrower", "need more");
    if (w == "value_error") throw sdk::SMDebugValueError("bad value");
    if (w == "runtime_error") throw std::runtime_error("boom");
    if (w == "logic_error") throw std::logic_error("logic");
    if (w == "bad_alloc") throw std::bad_alloc();
    if (w == "int") throw 42;
    if (w == "long") throw std::runtime_error(std::string(5000, 'L'));
    if (w == "result_error") return sdk::fail(sdk::Error::step_unavailable(step));
    if (w == "result_ok_code") return sdk::fail(sdk::Error{.code = VIGIL_OK, .message = "confused"});
    if (w == "from_host") {
      // A host error passed through untouched.
      VIGIL_TRY(auto v, base_trial().tensor("gradients/b").value(step));
      (void)v;
      return false;
    }
    if (w == "from_host_throw") {
      auto v = sdk::value_or_throw(base_trial().tensor("gradients/b").value(step));
      return false;
    }
    return sdk::fail(sdk::Error::invalid_argument("unknown what: " + w));
  }

 private:
  std::string what_;
};

// Throws from its constructor.
class CtorThrower final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {sdk::param_int("mode", "0", "0: runtime_error, 1: int, 2: smdebug")};
  explicit CtorThrower(sdk::RuleContext ctx) : Rule(std::move(ctx)) {
    const int64_t mode = params().get_int("mode");
    if (mode == 0) throw std::runtime_error("constructor failed");
    if (mode == 1) throw 42;
    if (mode == 2) throw sdk::InsufficientInformationForRuleInvocation("CtorThrower", "no gradients");
  }
  sdk::Result<bool> invoke_at_step(vigil_step) override { return false; }
};

// Built through a static create() returning Result, and using every host service.
class Probe final : public sdk::Rule {
 public:
  static constexpr const char* kModes[] = {"fast", "exact", nullptr};
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_double("threshold", "0.5", "threshold").min(0),
      sdk::param_enum("mode", kModes, "fast", "mode"),
      sdk::param_string_list("collections", "gradients", "collections"),
      sdk::param_bool("fail_create", "false", "make create() fail"),
  };
  static constexpr uint32_t kFlags = VIGIL_RULEF_MULTI_TRIAL;
  static constexpr const char* kVersion = "9.9.9";

  static inline int plugin_inits = 0;
  static inline int plugin_deinits = 0;
  static inline bool fail_plugin_init = false;
  static inline Probe* last = nullptr;

  static sdk::Result<void> on_plugin_init(const sdk::Host& host, std::string_view path) {
    if (fail_plugin_init) return sdk::fail(sdk::Error::not_supported("plugin init refused"));
    ++plugin_inits;
    EXPECT_EQ(host.name(), "fake");
    EXPECT_EQ(path, "/plugins/libtest.so");
    return {};
  }
  static void on_plugin_deinit() noexcept { ++plugin_deinits; }

  static sdk::Result<std::unique_ptr<Probe>> create(sdk::RuleContext ctx) {
    if (ctx.params.get<bool>("fail_create").value_or(false))
      return sdk::fail(sdk::Error::insufficient_information(ctx.rule_name, "create refused"));
    auto p = std::unique_ptr<Probe>(new Probe(std::move(ctx)));
    last = p.get();
    return p;
  }
  ~Probe() override {
    if (last == this) last = nullptr;
  }

  sdk::Result<void> required_tensors(vigil_step step, sdk::RequiredTensors& req) override {
    VIGIL_TRY_VOID(req.add("gradients/a", {step}));
    VIGIL_TRY_VOID(req.add("gradients/.*", {step, step + 1}, 0, true));
    if (!other_trials().empty()) VIGIL_TRY_VOID(req.add(other_trials()[0], "weights/w", {step}));
    return req.add("missing", {step});
  }

  sdk::Result<bool> invoke_at_step(vigil_step step) override {
    log(VIGIL_LOG_INFO, "step {} mode {} threshold {}", step, params().get_string("mode"), params().get_double("threshold"));
    if (is_cancelled()) return sdk::fail(sdk::Error::cancelled());
    VIGIL_TRY(const double m, base_trial().tensor("gradients/a").reduction_value(step, "mean", true));
    if (m < params().get_double("threshold")) return false;
    VIGIL_TRY_VOID(report_evidence(sdk::JsonObject().add("tensor", "gradients/a").add("mean_abs", m).str()));
    return true;
  }

 private:
  explicit Probe(sdk::RuleContext ctx) : Rule(std::move(ctx)) {}
};

// Reads undeclared parameters (ABI 1.1, VIGIL_RULEF_EXTRA_PARAMS).
class Extras final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {sdk::param_int("declared", "1", "a declared parameter")};
#if VIGIL_ABI_MINOR >= 1
  static constexpr uint32_t kFlags = VIGIL_RULEF_EXTRA_PARAMS;
#endif
  static inline std::vector<std::pair<std::string, std::string>> seen;
  explicit Extras(sdk::RuleContext ctx) : Rule(std::move(ctx)) {
    seen.assign(params().extra().begin(), params().extra().end());
  }
  sdk::Result<bool> invoke_at_step(vigil_step) override { return params().extra("custom") == "yes"; }
};

}  // namespace

#if VIGIL_ABI_MINOR >= 2
namespace {
// ABI 1.2: a calibrated default, not_judged and wall-clock ticks.
class Patient final : public sdk::Rule {
 public:
  static constexpr sdk::ParamSpec kParams[] = {
      sdk::param_int("min_steps", "0", "steps before judging").min(0).calibrated("2"),
      sdk::param_string("name", "x", "no calibrated default"),
  };
  explicit Patient(sdk::RuleContext ctx) : Rule(std::move(ctx)), min_steps_(params().get_int("min_steps")) {}
  sdk::Result<bool> invoke_at_step(vigil_step step) override {
    if (step < min_steps_) not_judged(fmt::format("step {} < {}", step, min_steps_));
    return false;
  }
  sdk::Result<bool> invoke_at_time(double wall_time, vigil_step last_step) override {
    if (last_step < 0) return sdk::fail(sdk::Error::invalid_argument("no step yet"));
    return wall_time > 100;
  }

 private:
  int64_t min_steps_;
};
}  // namespace
#define VIGIL_TEST_PATIENT_RULE , VIGIL_RULE(Patient, "vigil.test.Patient", "Patient", "ABI 1.2 services")
#else
#define VIGIL_TEST_PATIENT_RULE
#endif

VIGIL_PLUGIN("vigil.test.in-process", "2.0.1",
             VIGIL_RULE(Thrower, "vigil.test.Thrower", "Thrower", "Fails on demand"),
             VIGIL_RULE(CtorThrower, "vigil.test.CtorThrower", "CtorThrower", "Fails in its constructor"),
             VIGIL_RULE(Probe, "vigil.test.Probe", "Probe", "Uses the host services"),
             VIGIL_RULE(Extras, "vigil.test.Extras", "Extras", "Reads extra parameters") VIGIL_TEST_PATIENT_RULE);

constexpr uint32_t kRuleCount = VIGIL_ABI_MINOR >= 2 ? 5 : 4;

namespace {

static_assert(noexcept(sdk::detail::rule_invoke_at_step(nullptr, 0, nullptr, nullptr)));
static_assert(noexcept(sdk::detail::rule_required_tensors(nullptr, 0, nullptr, nullptr)));
static_assert(noexcept(sdk::detail::rule_destroy(nullptr)));

// What a host does for one rule instance.
class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    entry = vigil_plugin_entry_v1(VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR);
    ASSERT_NE(entry, nullptr);
    ASSERT_EQ(entry->init(&api, "/plugins/libtest.so", &err), VIGIL_OK);
    factory = static_cast<const vigil_rule_factory*>(entry->get_factory(VIGIL_RULE_FACTORY_ID));
    ASSERT_NE(factory, nullptr);
  }
  void TearDown() override {
    for (vigil_rule* r : rules) r->destroy(r);
    entry->deinit();
    EXPECT_EQ(fake::views_alive.load(), 0);
  }

  // Creates rule `id` with one string parameter value per spec, given as text.
  vigil_status create(const char* id, std::vector<vigil_param_value> values, vigil_rule** out) {
    ctx.params = values.empty() ? nullptr : values.data();
    ctx.param_count = static_cast<uint32_t>(values.size());
    err = vigil_error{};
    err.struct_size = sizeof(vigil_error);
    const vigil_status s = factory->create(factory, id, &ctx, out, &err);
    if (s == VIGIL_OK && *out) rules.push_back(*out);
    return s;
  }
  static vigil_param_value string_value(const char* text) {
    vigil_param_value v{VIGIL_PARAM_STRING, true, text, {}, nullptr, 0};
    v.v.s = text;
    return v;
  }
  vigil_rule* thrower(const char* what) {
    vigil_rule* r = nullptr;
    EXPECT_EQ(create("vigil.test.Thrower", {string_value(what)}, &r), VIGIL_OK) << err.message;
    return r;
  }
  vigil_status invoke(vigil_rule* r, vigil_step step, bool* met) {
    err = vigil_error{};
    err.struct_size = sizeof(vigil_error);
    return r->invoke_at_step(r, step, met, &err);
  }

  vigil_host_api api = fake::host_api();
  vigil_trial base = fake::make_trial();
  vigil_trial other = fake::make_trial();
  vigil_session session;
  vigil_trial* trial_list[2] = {&base, &other};
  vigil_rule_context ctx{sizeof(vigil_rule_context), &api, &session, trial_list, 1, nullptr, 0, "my-instance"};
  vigil_error err{sizeof(vigil_error)};
  const vigil_plugin_entry* entry = nullptr;
  const vigil_rule_factory* factory = nullptr;
  std::vector<vigil_rule*> rules;
};

}  // namespace

TEST_F(PluginTest, EntryAndDescriptors) {
  EXPECT_EQ(entry->struct_size, sizeof(vigil_plugin_entry));
  EXPECT_EQ(entry->abi.major, VIGIL_ABI_MAJOR);
  EXPECT_EQ(entry->abi.minor, VIGIL_ABI_MINOR);
  EXPECT_STREQ(entry->plugin_id, "vigil.test.in-process");
  EXPECT_STREQ(entry->plugin_version, "2.0.1");
  EXPECT_NE(std::string(entry->build_info).find("vigil-sdk " VIGIL_SDK_VERSION_STRING), std::string::npos);
  EXPECT_EQ(entry->get_factory("vigil.other-factory/1"), nullptr);
  EXPECT_EQ(entry->get_factory(nullptr), nullptr);
  EXPECT_EQ(vigil_plugin_entry_v1(VIGIL_ABI_MAJOR, 99), entry);  // static data

  ASSERT_EQ(factory->count(factory), kRuleCount);
  const vigil_rule_descriptor* d = factory->descriptor(factory, 0);
  EXPECT_EQ(d->struct_size, sizeof(vigil_rule_descriptor));
  EXPECT_STREQ(d->id, "vigil.test.Thrower");
  EXPECT_STREQ(d->name, "Thrower");
  EXPECT_STREQ(d->version, "2.0.1");  // the plugin's
  EXPECT_STREQ(d->description, "Fails on demand");
  ASSERT_EQ(d->param_count, 1u);
  EXPECT_STREQ(d->params[0].name, "what");
  EXPECT_EQ(d->params[0].type, VIGIL_PARAM_STRING);
  EXPECT_STREQ(d->params[0].default_text, "none");
  EXPECT_EQ(d->flags, 0u);

  const vigil_rule_descriptor* p = factory->descriptor(factory, 2);
  EXPECT_STREQ(p->version, "9.9.9");
  EXPECT_EQ(p->flags, uint32_t{VIGIL_RULEF_MULTI_TRIAL});
  ASSERT_EQ(p->param_count, 4u);
  EXPECT_EQ(p->params[1].type, VIGIL_PARAM_ENUM);
  EXPECT_STREQ(p->params[1].choices[1], "exact");
  EXPECT_EQ(factory->descriptor(factory, kRuleCount), nullptr);
}

TEST_F(PluginTest, InitIsReferenceCountedAndRunsHooks) {
  const int inits = Probe::plugin_inits;  // SetUp ran the first init
  const int deinits = Probe::plugin_deinits;
  EXPECT_GE(inits, 1);
  EXPECT_EQ(sdk::plugin_host().get(), &api);
  EXPECT_EQ(sdk::plugin_path(), "/plugins/libtest.so");
  ASSERT_EQ(entry->init(&api, "/plugins/libtest.so", &err), VIGIL_OK);  // second init: counted only
  EXPECT_EQ(Probe::plugin_inits, inits);
  entry->deinit();
  EXPECT_EQ(Probe::plugin_deinits, deinits);
  EXPECT_EQ(sdk::plugin_host().get(), &api);
  entry->deinit();  // the last one
  EXPECT_EQ(Probe::plugin_deinits, deinits + 1);
  EXPECT_FALSE(sdk::plugin_host());
  entry->deinit();  // unbalanced: ignored
  EXPECT_EQ(Probe::plugin_deinits, deinits + 1);

  // A failing hook fails init with its status and message, and leaves nothing initialized.
  Probe::fail_plugin_init = true;
  EXPECT_EQ(entry->init(&api, "/plugins/libtest.so", &err), VIGIL_E_NOT_SUPPORTED);
  EXPECT_STREQ(err.message, "plugin init refused");
  EXPECT_FALSE(sdk::plugin_host());
  Probe::fail_plugin_init = false;

  // A host of another ABI major is refused.
  vigil_host_api v2 = fake::host_api();
  v2.abi.major = 2;
  EXPECT_EQ(entry->init(&v2, "/x.so", &err), VIGIL_E_VERSION_MISMATCH);
  EXPECT_NE(std::string(err.message).find("the host 2."), std::string::npos) << err.message;
  EXPECT_EQ(entry->init(nullptr, "/x.so", &err), VIGIL_E_INVALID_ARGUMENT);

  ASSERT_EQ(entry->init(&api, "/plugins/libtest.so", &err), VIGIL_OK);  // for TearDown
  EXPECT_EQ(Probe::plugin_inits, inits + 1);
}

TEST_F(PluginTest, CreateRejectsBadInput) {
  vigil_rule* r = reinterpret_cast<vigil_rule*>(0x1);
  EXPECT_EQ(create("vigil.test.Nope", {}, &r), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(r, nullptr);
  EXPECT_STREQ(err.message, "plugin vigil.test.in-process has no rule vigil.test.Nope");
  EXPECT_EQ(factory->create(factory, nullptr, &ctx, &r, &err), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(factory->create(factory, "vigil.test.Thrower", nullptr, &r, &err), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(factory->create(factory, "vigil.test.Thrower", &ctx, nullptr, &err), VIGIL_E_INVALID_ARGUMENT);
  ctx.trial_count = 0;
  EXPECT_EQ(create("vigil.test.Thrower", {string_value("none")}, &r), VIGIL_E_INVALID_ARGUMENT);
  ctx.trial_count = 1;
  // A value of the wrong type for the declared parameter.
  vigil_param_value wrong{VIGIL_PARAM_INT64, true, "1", {}, nullptr, 0};
  EXPECT_EQ(create("vigil.test.Thrower", {wrong}, &r), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(r, nullptr);
}

TEST_F(PluginTest, ConstructorExceptionsBecomeStatuses) {
  const auto int_value = [](int64_t i) {
    vigil_param_value v{VIGIL_PARAM_INT64, true, "0", {}, nullptr, 0};
    v.v.i = i;
    return v;
  };
  vigil_rule* r = reinterpret_cast<vigil_rule*>(0x1);
  EXPECT_EQ(create("vigil.test.CtorThrower", {int_value(0)}, &r), VIGIL_E_INTERNAL);
  EXPECT_EQ(r, nullptr);
  EXPECT_STREQ(err.message, "constructor failed");
  EXPECT_EQ(err.code, VIGIL_E_INTERNAL);
  EXPECT_EQ(create("vigil.test.CtorThrower", {int_value(1)}, &r), VIGIL_E_INTERNAL);
  EXPECT_STREQ(err.message, "unknown exception");
  EXPECT_EQ(create("vigil.test.CtorThrower", {int_value(2)}, &r), VIGIL_E_INSUFFICIENT_INFORMATION);
  EXPECT_STREQ(err.rule, "CtorThrower");
  EXPECT_STREQ(err.message, "Insufficient information to invoke rule CtorThrower: no gradients");
  EXPECT_EQ(create("vigil.test.CtorThrower", {int_value(3)}, &r), VIGIL_OK);
  EXPECT_NE(r, nullptr);
}

TEST_F(PluginTest, EveryExceptionMapsToItsStatus) {
  struct Case {
    const char* what;
    vigil_status status;
    const char* message;  // nullptr: not checked
  };
  const Case cases[] = {
      {"tensor_unavailable_for_step", VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP,
       "Value for tensor t is not available for step 3 with mode TRAIN as it was not saved.This tensor has "
       "reductions saved for this step. You might want to query for the reductions."},
      {"tensor_unavailable", VIGIL_E_TENSOR_UNAVAILABLE, "Tensor t was not saved."},
      {"step_unavailable", VIGIL_E_STEP_UNAVAILABLE, "Step 3 of mode EVAL is not available as it was not saved"},
      {"step_not_yet_available", VIGIL_E_STEP_NOT_YET_AVAILABLE, "Step 3 of mode GLOBAL not yet available"},
      {"no_more_data", VIGIL_E_NO_MORE_DATA,
       "Looking for step 3 of mode GLOBAL and reached end of training. Max step available is 2"},
      {"index_reader", VIGIL_E_INDEX_READER, "Invalid File Found: x"},
      {"invalid_worker", VIGIL_E_INVALID_WORKER, "Invalid Worker: w3"},
      {"shape_unavailable", VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP,
       "Shape for tensor t is not available for step 3 with mode GLOBAL as it was not saved."},
      {"insufficient", VIGIL_E_INSUFFICIENT_INFORMATION, "Insufficient information to invoke rule Thrower: need more"},
      {"value_error", VIGIL_E_INVALID_ARGUMENT, "bad value"},
      {"runtime_error", VIGIL_E_INTERNAL, "boom"},
      {"logic_error", VIGIL_E_INTERNAL, "logic"},
      {"bad_alloc", VIGIL_E_OUT_OF_MEMORY, "out of memory"},
      {"int", VIGIL_E_INTERNAL, "unknown exception"},
      {"result_error", VIGIL_E_STEP_UNAVAILABLE, "Step 3 of mode GLOBAL is not available as it was not saved"},
      {"result_ok_code", VIGIL_E_INTERNAL, "the rule reported an error with status VIGIL_OK"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    vigil_rule* r = thrower(c.what);
    ASSERT_NE(r, nullptr);
    bool met = true;
    EXPECT_EQ(invoke(r, 3, &met), c.status);
    EXPECT_EQ(err.code, c.status);
    EXPECT_FALSE(met);
    if (c.message) {
      EXPECT_STREQ(err.message, c.message);
    }
  }
  // Fields travel with the status.
  vigil_rule* r = thrower("tensor_unavailable_for_step");
  bool met = false;
  invoke(r, 5, &met);
  EXPECT_STREQ(err.tensor, "t");
  EXPECT_EQ(err.step, 5);
  EXPECT_EQ(err.mode, VIGIL_MODE_TRAIN);
  EXPECT_TRUE(err.flags & VIGIL_ERRF_HAS_REDUCTIONS);
  r = thrower("invalid_worker");
  invoke(r, 5, &met);
  EXPECT_STREQ(err.worker, "w3");
  r = thrower("no_more_data");
  invoke(r, 5, &met);
  EXPECT_EQ(err.last_step, 4);
}

TEST_F(PluginTest, ConditionMetSignals) {
  bool met = false;
  EXPECT_EQ(invoke(thrower("none"), 1, &met), VIGIL_OK);
  EXPECT_FALSE(met);
  EXPECT_EQ(invoke(thrower("met"), 1, &met), VIGIL_OK);
  EXPECT_TRUE(met);

  met = false;
  EXPECT_EQ(invoke(thrower("condition_met"), 6, &met), VIGIL_S_RULE_CONDITION_MET);
  EXPECT_TRUE(met);
  EXPECT_STREQ(err.rule, "Thrower");
  EXPECT_EQ(err.step, 6);
  EXPECT_FALSE(err.flags & VIGIL_ERRF_END_OF_RULE);
  EXPECT_STREQ(err.message, "Evaluation of the rule Thrower at step 6 resulted in the condition being met");

  // end_of_rule, and a rule name filled in by the SDK when the exception has none.
  EXPECT_EQ(invoke(thrower("condition_met_end"), 7, &met), VIGIL_S_RULE_CONDITION_MET);
  EXPECT_TRUE(err.flags & VIGIL_ERRF_END_OF_RULE);
  EXPECT_STREQ(err.rule, "Thrower");
  EXPECT_EQ(vigil_status_classify(VIGIL_S_RULE_CONDITION_MET), VIGIL_CLASS_SIGNAL);
}

TEST_F(PluginTest, HostErrorsPassThroughUnchanged) {
  bool met = false;
  for (const char* what : {"from_host", "from_host_throw"}) {
    SCOPED_TRACE(what);
    EXPECT_EQ(invoke(thrower(what), 1, &met), VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
    EXPECT_STREQ(err.tensor, "gradients/b");
    EXPECT_EQ(err.step, 1);
    EXPECT_TRUE(err.flags & VIGIL_ERRF_HAS_REDUCTIONS);
    EXPECT_STREQ(err.message,
                 "Value for tensor gradients/b is not available for step 1 with mode GLOBAL as it was not saved.");
  }
  EXPECT_EQ(invoke(thrower("from_host"), 2, &met), VIGIL_OK);
}

TEST_F(PluginTest, LongMessagesAreTruncatedAndSmallErrorStructsRespected) {
  vigil_rule* r = thrower("long");
  bool met = false;
  EXPECT_EQ(invoke(r, 1, &met), VIGIL_E_INTERNAL);
  EXPECT_EQ(std::strlen(err.message), sizeof(err.message) - 1);
  EXPECT_TRUE(err.flags & VIGIL_ERRF_TRUNCATED);

  // A caller whose vigil_error ends 16 bytes into message: nothing beyond is written.
  alignas(vigil_error) unsigned char buf[sizeof(vigil_error) + 32];
  std::memset(buf, 0xCD, sizeof buf);
  auto* small = reinterpret_cast<vigil_error*>(buf);
  small->struct_size = offsetof(vigil_error, message) + 16;
  EXPECT_EQ(r->invoke_at_step(r, 1, &met, small), VIGIL_E_INTERNAL);
  EXPECT_EQ(small->code, VIGIL_E_INTERNAL);
  EXPECT_EQ(std::string(small->message), std::string(15, 'L'));
  EXPECT_TRUE(small->flags & VIGIL_ERRF_TRUNCATED);
  for (size_t i = small->struct_size; i < sizeof buf; ++i) ASSERT_EQ(buf[i], 0xCD) << "byte " << i;

  // The same through the SMDebugError path (to_abi) and through a NULL err.
  vigil_rule* s = thrower("step_unavailable");
  std::memset(buf, 0xCD, sizeof buf);
  small->struct_size = offsetof(vigil_error, message) + 5;
  EXPECT_EQ(s->invoke_at_step(s, 1, &met, small), VIGIL_E_STEP_UNAVAILABLE);
  EXPECT_STREQ(small->message, "Step");
  EXPECT_EQ(small->step, 1);
  for (size_t i = small->struct_size; i < sizeof buf; ++i) ASSERT_EQ(buf[i], 0xCD) << "byte " << i;
  EXPECT_EQ(s->invoke_at_step(s, 1, &met, nullptr), VIGIL_E_STEP_UNAVAILABLE);
}

TEST_F(PluginTest, ProbeUsesParamsAndHostServices) {
  ctx.trial_count = 2;
  vigil_param_value values[4]{};
  values[0] = {VIGIL_PARAM_DOUBLE, true, "0.1", {}, nullptr, 0};
  values[0].v.d = 0.1;
  values[1] = {VIGIL_PARAM_ENUM, true, "exact", {}, nullptr, 0};
  values[1].v.s = "exact";
  const char* cols[] = {"gradients"};
  values[2] = {VIGIL_PARAM_STRING_LIST, true, "gradients", {}, cols, 1};
  values[3] = {VIGIL_PARAM_BOOL, true, "false", {}, nullptr, 0};
  vigil_rule* r = nullptr;
  ASSERT_EQ(create("vigil.test.Probe", {values, values + 4}, &r), VIGIL_OK) << err.message;
  ASSERT_NE(Probe::last, nullptr);
  const Probe& probe = *Probe::last;
  EXPECT_EQ(probe.instance_name(), "my-instance");
  EXPECT_EQ(probe.rule_name(), "Probe");
  EXPECT_EQ(probe.rule_id(), "vigil.test.Probe");
  EXPECT_EQ(probe.trials().size(), 2u);
  EXPECT_EQ(probe.other_trials().size(), 1u);
  EXPECT_EQ(probe.other_trials()[0].index(), 1u);
  EXPECT_EQ(probe.params().get_list("collections"), (std::vector<std::string>{"gradients"}));

  // required_tensors goes through the host's sink, with trial indexes and regex flags.
  ASSERT_NE(r->required_tensors, nullptr);
  struct Added {
    uint32_t trial;
    std::string name;
    bool regex;
    std::vector<vigil_step> steps;
  };
  std::vector<Added> added;
  vigil_required_sink sink{&added, [](void* c, uint32_t trial, const char* name, bool regex, const vigil_step* steps,
                                      size_t n) -> vigil_status {
                             if (std::string_view(name) == "missing") return VIGIL_E_TENSOR_UNAVAILABLE;
                             static_cast<std::vector<Added>*>(c)->push_back({trial, name, regex, {steps, steps + n}});
                             return VIGIL_OK;
                           }};
  EXPECT_EQ(r->required_tensors(r, 3, &sink, &err), VIGIL_E_TENSOR_UNAVAILABLE);
  EXPECT_STREQ(err.tensor, "missing");
  EXPECT_STREQ(err.message, "Tensor missing was not saved.");
  ASSERT_EQ(added.size(), 3u);
  EXPECT_EQ(added[0].name, "gradients/a");
  EXPECT_EQ(added[0].steps, (std::vector<vigil_step>{3}));
  EXPECT_FALSE(added[0].regex);
  EXPECT_TRUE(added[1].regex);
  EXPECT_EQ(added[1].steps, (std::vector<vigil_step>{3, 4}));
  EXPECT_EQ(added[2].trial, 1u);
  EXPECT_EQ(r->required_tensors(r, 3, nullptr, &err), VIGIL_E_INVALID_ARGUMENT);

  // invoke: logs, reads a reduction, reports evidence.
  bool met = false;
  EXPECT_EQ(invoke(r, 1, &met), VIGIL_OK) << err.message;
  EXPECT_TRUE(met);
  ASSERT_EQ(session.evidence.size(), 1u);
  EXPECT_EQ(session.evidence[0], R"({"tensor":"gradients/a","mean_abs":0.5})");
  ASSERT_FALSE(session.logs.empty());
  EXPECT_EQ(session.logs.back().first, VIGIL_LOG_INFO);
  EXPECT_EQ(session.logs.back().second, "step 1 mode exact threshold 0.1");

  // Cancellation is visible to the rule.
  session.cancelled = true;
  EXPECT_EQ(invoke(r, 1, &met), VIGIL_E_CANCELLED);
  EXPECT_EQ(vigil_status_classify(VIGIL_E_CANCELLED), VIGIL_CLASS_STOP);

  // ABI 1.1 output directory, where the host has one.
  if constexpr (fake::kHasOutputDirectory<>) {
    EXPECT_EQ(probe.output_directory().error().code, VIGIL_E_NOT_SUPPORTED);  // none for this session
    session.output_dir = "/out/rule";
    EXPECT_EQ(probe.output_directory().value(), "/out/rule");
    api.struct_size = offsetof(vigil_host_api, collection_tensor_names) + sizeof(api.collection_tensor_names);
  }
  EXPECT_EQ(probe.output_directory().error().code, VIGIL_E_NOT_SUPPORTED);  // a 1.0 host
  api.struct_size = sizeof(vigil_host_api);

  // A rule without a required_tensors override leaves the slot NULL.
  vigil_rule* t = thrower("none");
  EXPECT_EQ(t->required_tensors, nullptr);
  EXPECT_EQ(t->struct_size, sizeof(vigil_rule));
  EXPECT_EQ(t->get_extension(t, "anything/1"), nullptr);
}

TEST_F(PluginTest, StaticCreateCanFail) {
  vigil_param_value values[4]{};
  values[0] = {VIGIL_PARAM_DOUBLE, true, "0.1", {}, nullptr, 0};
  values[1] = {VIGIL_PARAM_ENUM, true, "fast", {}, nullptr, 0};
  values[1].v.s = "fast";
  values[2] = {VIGIL_PARAM_STRING_LIST, false, nullptr, {}, nullptr, 0};
  values[3] = {VIGIL_PARAM_BOOL, true, "true", {}, nullptr, 0};
  values[3].v.b = true;
  vigil_rule* r = nullptr;
  EXPECT_EQ(create("vigil.test.Probe", {values, values + 4}, &r), VIGIL_E_INSUFFICIENT_INFORMATION);
  EXPECT_EQ(r, nullptr);
  EXPECT_STREQ(err.message, "Insufficient information to invoke rule Probe: create refused");
}

#if VIGIL_ABI_MINOR >= 1
TEST_F(PluginTest, ExtraParametersReachRulesThatAskForThem) {
  EXPECT_EQ(factory->descriptor(factory, 3)->flags, uint32_t{VIGIL_RULEF_EXTRA_PARAMS});
  const char* names[] = {"custom", "other"};
  const char* values[] = {"yes", "1,2"};
  ctx.extra_param_names = names;
  ctx.extra_param_values = values;
  ctx.extra_param_count = 2;
  vigil_param_value declared{VIGIL_PARAM_INT64, true, "1", {}, nullptr, 0};
  vigil_rule* r = nullptr;
  ASSERT_EQ(create("vigil.test.Extras", {declared}, &r), VIGIL_OK) << err.message;
  ASSERT_EQ(Extras::seen.size(), 2u);
  EXPECT_EQ(Extras::seen[1].first, "other");
  EXPECT_EQ(Extras::seen[1].second, "1,2");
  bool met = false;
  EXPECT_EQ(invoke(r, 0, &met), VIGIL_OK);
  EXPECT_TRUE(met);

  // An ABI 1.0 context (smaller struct_size) has no extras, whatever lies beyond it.
  ctx.struct_size = offsetof(vigil_rule_context, extra_param_names);
  ASSERT_EQ(create("vigil.test.Extras", {declared}, &r), VIGIL_OK) << err.message;
  EXPECT_TRUE(Extras::seen.empty());
  EXPECT_EQ(invoke(r, 0, &met), VIGIL_OK);
  EXPECT_FALSE(met);
}
#endif

#if VIGIL_ABI_MINOR >= 2
TEST_F(PluginTest, CalibratedDefaultsNotJudgedAndTicks) {
  // Calibrated defaults: in the descriptor, only for the parameters that have one.
  const vigil_rule_descriptor* d = factory->descriptor(factory, 4);
  ASSERT_STREQ(d->name, "Patient");
  ASSERT_EQ(d->profile_default_count, 1u);
  EXPECT_EQ(d->profile_defaults[0].struct_size, sizeof(vigil_profile_default));
  EXPECT_STREQ(d->profile_defaults[0].profile, VIGIL_PROFILE_CALIBRATED);
  EXPECT_STREQ(d->profile_defaults[0].param, "min_steps");
  EXPECT_STREQ(d->profile_defaults[0].default_text, "2");
  EXPECT_EQ(factory->descriptor(factory, 0)->profile_default_count, 0u);
  EXPECT_EQ(factory->descriptor(factory, 0)->profile_defaults, nullptr);

  vigil_param_value values[2]{};
  values[0] = {VIGIL_PARAM_INT64, true, "2", {}, nullptr, 0};
  values[0].v.i = 2;
  values[1] = string_value("x");
  vigil_rule* r = nullptr;
  ASSERT_EQ(create("vigil.test.Patient", {values, values + 2}, &r), VIGIL_OK) << err.message;
  bool met = true;
  EXPECT_EQ(invoke(r, 1, &met), VIGIL_OK);
  EXPECT_FALSE(met);
  EXPECT_EQ(session.not_judged, (std::vector<std::string>{"step 1 < 2"}));
  EXPECT_EQ(invoke(r, 2, &met), VIGIL_OK);
  EXPECT_EQ(session.not_judged.size(), 1u);  // judged at step 2
  // An ABI 1.1 host has no not_judged: the call does nothing.
  api.struct_size = offsetof(vigil_host_api, saved_reductions) + sizeof(api.saved_reductions);
  EXPECT_EQ(invoke(r, 0, &met), VIGIL_OK);
  EXPECT_EQ(session.not_judged.size(), 1u);
  api.struct_size = sizeof(vigil_host_api);

  // Ticks: the slot exists only for rules that override invoke_at_time, and maps like invoke_at_step.
  ASSERT_TRUE(VIGIL_HAS_FIELD(r, vigil_rule, invoke_at_time));
  ASSERT_NE(r->invoke_at_time, nullptr);
  EXPECT_EQ(r->invoke_at_time(r, 200.0, 3, &met, &err), VIGIL_OK);
  EXPECT_TRUE(met);
  EXPECT_EQ(r->invoke_at_time(r, 50.0, 3, &met, &err), VIGIL_OK);
  EXPECT_FALSE(met);
  EXPECT_EQ(r->invoke_at_time(r, 200.0, -1, &met, &err), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_STREQ(err.message, "no step yet");
  EXPECT_EQ(thrower("none")->invoke_at_time, nullptr);
}
#endif
