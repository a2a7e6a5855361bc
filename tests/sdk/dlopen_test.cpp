// Loads real plugin libraries the way the host does (dlopen RTLD_NOW | RTLD_LOCAL, the one entry
// symbol) and drives them with the fake host: the test plugin built from the SDK, and the example
// plugin (examples/cpp_rule) when it is part of the build.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <vigil/vigil.h>

#include <string>
#include <string_view>
#include <vector>

#include "fake_host.hpp"

namespace {

class Library {
 public:
  explicit Library(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {}
  ~Library() {
    if (handle_) dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* handle() const { return handle_; }
  const vigil_plugin_entry* entry() const {
    auto fn = reinterpret_cast<vigil_plugin_entry_fn>(dlsym(handle_, VIGIL_PLUGIN_ENTRY_SYMBOL));
    return fn ? fn(VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR) : nullptr;
  }

 private:
  void* handle_;
};

// One loaded, initialized plugin and its rules.
struct Loaded {
  explicit Loaded(const char* path) : lib(path) {
    err.struct_size = sizeof(vigil_error);
    if (!lib.handle()) {
      ADD_FAILURE() << "dlopen: " << dlerror();
      return;
    }
    entry = lib.entry();
    if (!entry) {
      ADD_FAILURE() << "no " << VIGIL_PLUGIN_ENTRY_SYMBOL;
      return;
    }
    EXPECT_EQ(entry->init(&api, path, &err), VIGIL_OK) << err.message;
    factory = static_cast<const vigil_rule_factory*>(entry->get_factory(VIGIL_RULE_FACTORY_ID));
  }
  ~Loaded() {
    for (vigil_rule* r : rules) r->destroy(r);
    if (entry) entry->deinit();
  }

  vigil_rule* create(const char* id, std::vector<vigil_param_value> values, vigil_status expect = VIGIL_OK) {
    vigil_rule_context ctx{sizeof(vigil_rule_context), &api, &session, trials, 1, values.data(),
                           static_cast<uint32_t>(values.size()), "instance"};
    vigil_rule* r = nullptr;
    EXPECT_EQ(factory->create(factory, id, &ctx, &r, &err), expect) << err.message;
    if (r) rules.push_back(r);
    return r;
  }
  vigil_status invoke(vigil_rule* r, vigil_step step, bool* met) {
    err = vigil_error{};
    err.struct_size = sizeof(vigil_error);
    return r->invoke_at_step(r, step, met, &err);
  }

  Library lib;
  vigil_host_api api = fake::host_api();
  vigil_trial trial = fake::make_trial();
  vigil_trial* trials[1] = {&trial};
  vigil_session session;
  vigil_error err{};
  const vigil_plugin_entry* entry = nullptr;
  const vigil_rule_factory* factory = nullptr;
  std::vector<vigil_rule*> rules;
};

vigil_param_value text_value(vigil_param_type type, const char* text) {
  vigil_param_value v{type, true, text, {}, nullptr, 0};
  v.v.s = text;
  return v;
}
vigil_param_value double_value(double d) {
  vigil_param_value v{VIGIL_PARAM_DOUBLE, true, "", {}, nullptr, 0};
  v.v.d = d;
  return v;
}
vigil_param_value int_value(int64_t i) {
  vigil_param_value v{VIGIL_PARAM_INT64, true, "", {}, nullptr, 0};
  v.v.i = i;
  return v;
}

}  // namespace

TEST(SharedPlugin, LoadsAndDescribesItself) {
  Loaded p(VIGIL_SDK_TEST_PLUGIN);
  ASSERT_NE(p.factory, nullptr);
  EXPECT_STREQ(p.entry->plugin_id, "vigil.test.shared");
  EXPECT_EQ(p.entry->abi.major, VIGIL_ABI_MAJOR);
  ASSERT_EQ(p.factory->count(p.factory), 2u);
  const vigil_rule_descriptor* d = p.factory->descriptor(p.factory, 0);
  EXPECT_STREQ(d->name, "SumAbove");
  ASSERT_EQ(d->param_count, 2u);
  EXPECT_STREQ(d->params[1].name, "threshold");
  // Nothing but the entry is visible.
  EXPECT_EQ(dlsym(p.lib.handle(), "_ZN5vigil3sdk2v16detail12plugin_stateEv"), nullptr);
}

TEST(SharedPlugin, RunsARuleWithEigen) {
  Loaded p(VIGIL_SDK_TEST_PLUGIN);
  ASSERT_NE(p.factory, nullptr);
  vigil_rule* r = p.create("vigil.test.SumAbove", {text_value(VIGIL_PARAM_STRING, "weights/w"), double_value(20)});
  ASSERT_NE(r, nullptr);
  ASSERT_NE(r->required_tensors, nullptr);
  bool met = false;
  EXPECT_EQ(p.invoke(r, 1, &met), VIGIL_OK) << p.err.message;
  EXPECT_TRUE(met);  // 1+2+...+6 = 21 > 20
  ASSERT_EQ(p.session.evidence.size(), 1u);
  EXPECT_EQ(p.session.evidence[0], R"({"tensor":"weights/w","sum":21})");
  EXPECT_EQ(p.invoke(r, 9, &met), VIGIL_E_STEP_UNAVAILABLE);
  EXPECT_EQ(fake::views_alive.load(), 0);
}

TEST(SharedPlugin, ExceptionsNeverLeaveTheLibrary) {
  Loaded p(VIGIL_SDK_TEST_PLUGIN);
  ASSERT_NE(p.factory, nullptr);
  bool met = true;
  vigil_rule* r0 = p.create("vigil.test.Throws", {int_value(0)});
  EXPECT_EQ(p.invoke(r0, 1, &met), VIGIL_E_INTERNAL);
  EXPECT_STREQ(p.err.message, "thrown inside the plugin");
  EXPECT_FALSE(met);
  vigil_rule* r1 = p.create("vigil.test.Throws", {int_value(1)});
  EXPECT_EQ(p.invoke(r1, 4, &met), VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  EXPECT_STREQ(p.err.tensor, "x");
  EXPECT_EQ(p.err.step, 4);
  vigil_rule* r2 = p.create("vigil.test.Throws", {int_value(2)});
  EXPECT_EQ(p.invoke(r2, 1, &met), VIGIL_E_INTERNAL);
  EXPECT_STREQ(p.err.message, "unknown exception");
  EXPECT_EQ(p.create("vigil.test.Throws", {int_value(-1)}, VIGIL_E_INTERNAL), nullptr);
  EXPECT_STREQ(p.err.message, "kind must be >= 0");
}

#ifdef VIGIL_SDK_EXAMPLE_PLUGIN
TEST(ExamplePlugin, GradientMeanAbsBelow) {
  Loaded p(VIGIL_SDK_EXAMPLE_PLUGIN);
  ASSERT_NE(p.factory, nullptr);
  ASSERT_EQ(p.factory->count(p.factory), 1u);
  const vigil_rule_descriptor* d = p.factory->descriptor(p.factory, 0);
  EXPECT_STREQ(d->name, "GradientMeanAbsBelow");
  ASSERT_EQ(d->param_count, 1u);
  EXPECT_STREQ(d->params[0].name, "threshold");
  EXPECT_STREQ(d->params[0].default_text, "1e-7");
  EXPECT_EQ(d->params[0].min_value, 0.0);

  vigil_rule* r = p.create(d->id, {double_value(1e-7)});
  ASSERT_NE(r, nullptr);
  bool met = true;
  // Step 1: every gradient's mean |x| is 0.5 (or 1.5 for gradients/b, which is absent at odd steps).
  EXPECT_EQ(p.invoke(r, 1, &met), VIGIL_OK) << p.err.message;
  EXPECT_FALSE(met);
  // Step 2: gradients/a on worker_1 has mean |x| = 1e-9.
  EXPECT_EQ(p.invoke(r, 2, &met), VIGIL_OK) << p.err.message;
  EXPECT_TRUE(met);
  ASSERT_EQ(p.session.evidence.size(), 1u);
  const std::string& ev = p.session.evidence[0];
  EXPECT_NE(ev.find(R"("tensor":"gradients/a")"), std::string::npos) << ev;
  EXPECT_NE(ev.find(R"("worker":"worker_1")"), std::string::npos) << ev;
  EXPECT_NE(ev.find(R"("threshold":1e-07)"), std::string::npos) << ev;
  EXPECT_NE(ev.find(R"("mean_abs":)"), std::string::npos) << ev;
  // A step where no gradient was saved: every tensor is skipped (TensorUnavailableForStep).
  EXPECT_EQ(p.invoke(r, 7, &met), VIGIL_OK) << p.err.message;
  EXPECT_FALSE(met);
  // A threshold nothing is below.
  vigil_rule* strict = p.create(d->id, {double_value(0)});
  EXPECT_EQ(p.invoke(strict, 2, &met), VIGIL_OK);
  EXPECT_FALSE(met);
}
#endif
