// Plugin loading: what is accepted, every refusal and its reason, and parameter validation.
#include <gtest/gtest.h>

#include <cstdlib>

#include "plugin_test_support.h"
#include "plugin_host/param_values.h"
#include "test_trials.h"

namespace vigil {
namespace {

using testing::registry_with;
using testing::variant_dir;

TEST(PluginLoader, LoadsAGoodPlugin) {
  auto registry = registry_with({"good"});
  ASSERT_TRUE(registry.refused().empty()) << registry.refused().front().reason;
  ASSERT_EQ(registry.rules().size(), 5u);
  const auto* steps = registry.find("stepsrule");  // rule_to_invoke matches case-insensitively
  ASSERT_NE(steps, nullptr);
  EXPECT_STREQ(steps->descriptor->id, "vigil.test.StepsRule");
  EXPECT_EQ(registry.find("vigil.test.Thrower"), registry.find("Thrower"));
  EXPECT_EQ(registry.find("NoSuchRule"), nullptr);
  EXPECT_EQ(steps->plugin_id, "vigil.test.variant.good");
}

struct RefusalCase {
  const char* variant;
  std::string reason_contains;
};

// "1.1": the host's ABI version as refusal messages spell it.
const std::string kHostAbi = std::to_string(VIGIL_ABI_MAJOR) + "." + std::to_string(VIGIL_ABI_MINOR);

class PluginRefusal : public ::testing::TestWithParam<RefusalCase> {};

TEST_P(PluginRefusal, IsRefusedWithAReason) {
  auto registry = registry_with({GetParam().variant});
  EXPECT_TRUE(registry.rules().empty());
  ASSERT_EQ(registry.refused().size(), 1u);
  EXPECT_NE(registry.refused()[0].reason.find(GetParam().reason_contains), std::string::npos)
      << registry.refused()[0].reason;
  EXPECT_EQ(registry.refused()[0].path.parent_path(), variant_dir(GetParam().variant));
}

INSTANTIATE_TEST_SUITE_P(
    Variants, PluginRefusal,
    ::testing::Values(RefusalCase{"no_entry", "no entry symbol vigil_plugin_entry_v1"},
                      RefusalCase{"abi_major_2", "built for ABI 2." + std::to_string(VIGIL_ABI_MINOR) + ", the host speaks ABI " + kHostAbi},
                      RefusalCase{"declines_host", "declined host ABI " + kHostAbi},
                      RefusalCase{"init_fails", "deliberate init failure"},
                      RefusalCase{"needs_newer_minor", "needs host ABI 1.7 or newer"},
                      RefusalCase{"bad_descriptor", "has no name"},
                      RefusalCase{"bad_param_default", "the default of broken is invalid"},
                      RefusalCase{"throw_in_entry", "the entry function threw a C++ exception"},
                      RefusalCase{"throw_in_init", "init threw a C++ exception"},
                      RefusalCase{"throw_in_get_factory", "get_factory threw a C++ exception"},
                      RefusalCase{"throw_in_count", "count threw a C++ exception"},
                      RefusalCase{"throw_in_descriptor", "descriptor threw a C++ exception"}),
    [](const auto& info) { return std::string(info.param.variant); });

TEST(PluginLoader, DuplicateRulesAreRefusedAndTheFirstKept) {
  auto registry = registry_with({"good", "duplicate_id"});
  EXPECT_EQ(registry.rules().size(), 5u);
  ASSERT_EQ(registry.refused().size(), 1u);
  EXPECT_NE(registry.refused()[0].reason.find("is already provided by"), std::string::npos) << registry.refused()[0].reason;
  EXPECT_STREQ(registry.find("StepsRule")->descriptor->id, "vigil.test.StepsRule");
}

TEST(PluginLoader, GoesOnAfterARefusal) {
  testing::TempDir dir;
  for (const char* v : {"init_fails", "good", "no_entry"})
    std::filesystem::copy_file(variant_dir(v) / ("libvigil_test_plugin_" + std::string(v) + ".so"),
                               dir.path() / ("lib" + std::string(v) + ".so"));
  plugins::PluginRegistry registry;
  registry.load_directory(dir.path());
  EXPECT_EQ(registry.rules().size(), 5u);
  EXPECT_EQ(registry.refused().size(), 2u);
}

TEST(PluginLoader, RefusesRelativeAndMissingPaths) {
  plugins::PluginRegistry registry;
  registry.load_directory("relative/plugins");
  registry.load_directory("/no/such/vigil/plugin/dir");
  auto file = registry.load_file("libfoo.so");
  ASSERT_FALSE(file.has_value());
  ASSERT_EQ(registry.refused().size(), 3u);
  EXPECT_NE(registry.refused()[0].reason.find("absolute"), std::string::npos);
  EXPECT_NE(registry.refused()[1].reason.find("no such plugin directory"), std::string::npos);
  EXPECT_NE(registry.refused()[2].reason.find("absolute paths only"), std::string::npos);
}

TEST(PluginLoader, ThrowingDeinitIsContained) {
  auto registry = std::make_unique<plugins::PluginRegistry>(registry_with({"throw_in_deinit"}));
  EXPECT_EQ(registry->rules().size(), 5u);
  registry.reset();  // unloading calls deinit, which throws: no crash
  SUCCEED();
}

TEST(PluginLoader, SearchPathOrder) {
  ::setenv("VIGIL_PLUGIN_PATH", "/opt/a:/opt/b::/opt/a", 1);
  auto dirs = plugins::plugin_directories({"/cli/dir"});
  ::unsetenv("VIGIL_PLUGIN_PATH");
  ASSERT_GE(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], "/cli/dir");
  EXPECT_EQ(dirs[1], "/opt/a");
  EXPECT_EQ(dirs[2], "/opt/b");
}

// Plugins load only from absolute folders: a relative --plugins or VIGIL_PLUGIN_PATH entry (or an
// empty one, which a shell PATH reads as ".") would load whatever the working directory holds.
TEST(PluginLoader, RelativeSearchPathEntriesAreRefusedNotResolved) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "plugins");
  std::filesystem::copy_file(variant_dir("good") / "libvigil_test_plugin_good.so", dir.path() / "plugins" / "libgood.so");
  std::filesystem::copy_file(variant_dir("good") / "libvigil_test_plugin_good.so", dir.path() / "libgood.so");
  const auto previous_cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());  // the plugins are now reachable by relative paths
  ::setenv("VIGIL_PLUGIN_PATH", "plugins::.", 1);
  plugins::PluginRegistry registry;
  for (const auto& d : plugins::plugin_directories({"plugins", "./plugins"})) registry.load_directory(d);
  ::unsetenv("VIGIL_PLUGIN_PATH");
  std::filesystem::current_path(previous_cwd);

  EXPECT_TRUE(registry.rules().empty());
  ASSERT_EQ(registry.refused().size(), 3u);  // "plugins" (given twice), "./plugins", "."
  for (const auto& r : registry.refused())
    EXPECT_NE(r.reason.find("plugin directories must be absolute paths"), std::string::npos) << r.reason;
}

// ---- parameters ----

class Params : public ::testing::Test {
 protected:
  void SetUp() override {
    registry = registry_with({"good"});
    rule = registry.find("Validated")->descriptor;
  }
  Result<plugins::BoundParams> bind(std::map<std::string, std::string> given) {
    return plugins::BoundParams::bind(*rule, given, "my-rule");
  }
  void expect_refused(std::map<std::string, std::string> given, const std::string& part) {
    auto b = bind(std::move(given));
    ASSERT_FALSE(b.has_value());
    EXPECT_EQ(b.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(b.error().message.find(part), std::string::npos) << b.error().message;
    EXPECT_NE(b.error().message.find("my-rule"), std::string::npos) << b.error().message;
  }
  plugins::PluginRegistry registry;
  const vigil_rule_descriptor* rule = nullptr;
};

TEST_F(Params, DefaultsAndTypedValues) {
  auto b = bind({{"needed", "x"}, {"ratio", "0.25"}, {"flag", "TRUE"}, {"mode", "eval"}});
  ASSERT_TRUE(b.has_value()) << b.error().message;
  const vigil_param_value* v = b->data();
  ASSERT_EQ(b->size(), 6u);
  EXPECT_DOUBLE_EQ(v[0].v.d, 0.25);
  EXPECT_EQ(v[1].v.i, 3);  // default
  EXPECT_TRUE(v[2].v.b);
  EXPECT_STREQ(v[3].v.s, "EVAL");  // canonical spelling of the choice
  EXPECT_STREQ(v[4].text, ".*");
  EXPECT_STREQ(v[5].text, "x");
}

TEST_F(Params, Refusals) {
  expect_refused({{"needed", "x"}, {"bogus", "1"}}, "unknown parameter 'bogus'");
  expect_refused({}, "required parameter 'needed' is missing");
  expect_refused({{"needed", "x"}, {"ratio", "1.5"}}, "parameter 'ratio' has invalid value '1.5': must be between 0 and 1");
  expect_refused({{"needed", "x"}, {"ratio", "half"}}, "expected a number");
  expect_refused({{"needed", "x"}, {"count", "0"}}, "must be >= 1");
  expect_refused({{"needed", "x"}, {"count", "2.5"}}, "expected an integer");
  expect_refused({{"needed", "x"}, {"flag", "maybe"}}, "expected True or False");
  expect_refused({{"needed", "x"}, {"mode", "PREDICT"}}, "expected one of TRAIN, EVAL");
  expect_refused({{"needed", "x"}, {"pattern", "(unclosed"}}, "not a valid regular expression");
}

// Found by fuzz/param_values_fuzzer: a NUL inside a name or value (JSON's "\u0000") used to cut it
// short on its way to the rule as a C string, so "0.5\0junk" passed as 0.5.
TEST_F(Params, NulCharactersAreRefused) {
  using namespace std::string_literals;
  expect_refused({{"needed", "x\0tail"s}}, "parameter 'needed' contains a NUL character");
  expect_refused({{"needed", "x"}, {"ratio", "0.5\0junk"s}}, "parameter 'ratio' contains a NUL character");
  expect_refused({{"needed", "x"}, {"patter\x19\0\0\0n"s, "^conv"}}, "contains a NUL character");
}

// Found by fuzz/param_values_fuzzer: libstdc++'s regex compiler overflowed a long (undefined
// behaviour) reading this 49-digit back-reference; such numbers, and patterns long enough to
// overflow its recursion, are refused before std::regex sees them.
TEST(ParamRegex, OverlongNumbersAndPatternsAreRefused) {
  vigil_param_spec spec{sizeof(spec), "pattern", VIGIL_PARAM_REGEX, 0, nullptr, NAN, NAN, nullptr, ""};
  using namespace std::string_literals;
  // The value of the crashing input, bytes as found.
  const std::string fuzz_input =
      "\0\0\t\\\\\xdc\\\\\\\\\\1111111111111111111111111111111111111111111111111\\\\\\\\\\\\\\\x11 "s;
  for (const std::string& bad : {fuzz_input, "a{12345678901}"s, "a{1,12345678901}"s, "(x)\\12345678901"s,
                                 std::string(5000, 'a')}) {
    auto p = plugins::parse_param_value(spec, bad);
    ASSERT_FALSE(p.has_value()) << bad;
    EXPECT_NE(p.error().find("not an accepted regular expression"), std::string::npos) << p.error();
  }
  for (const std::string& good : {"a{2,3}"s, "(x)\\1"s, "layer_1234567890123"s, std::string(4096, 'a')})
    EXPECT_TRUE(plugins::parse_param_value(spec, good).has_value()) << good;
}

TEST(ParamList, SplitsOnCommas) {
  vigil_param_spec spec{sizeof(spec), "names", VIGIL_PARAM_STRING_LIST, 0, nullptr, NAN, NAN, nullptr, ""};
  auto p = plugins::parse_param_value(spec, " a, b ,,c ");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->list, (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace vigil
