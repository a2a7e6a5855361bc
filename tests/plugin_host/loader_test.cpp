// Plugin loading: what is accepted, every refusal and its reason, and parameter validation.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "plugin_test_support.h"
#include "plugin_host/extensions.h"
#include "plugin_host/host_services.h"
#include "plugin_host/param_values.h"
#include "test_probe_extension.h"
#include "test_support.h"

namespace vigil {
namespace {

using test::registry_with;
using test::variant_dir;

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

// ABI 1.4's rule preparer is looked up once, at load, and only from plugins built for 1.4 or later.
TEST(PluginLoader, FindsTheRulePreparerOfAPluginThatOffersOne) {
  auto prepares = registry_with({"prepares"});
  ASSERT_TRUE(prepares.refused().empty()) << prepares.refused().front().reason;
  ASSERT_EQ(prepares.rules().size(), 5u);
  for (const auto& r : prepares.rules()) {
    ASSERT_NE(r.preparer, nullptr) << r.descriptor->id;
    EXPECT_NE(r.preparer->prepare, nullptr);
  }
  auto good = registry_with({"good"});  // answers NULL for the preparer's id
  for (const auto& r : good.rules()) EXPECT_EQ(r.preparer, nullptr) << r.descriptor->id;
}

TEST(PluginLoader, APluginBuiltForAnOlderMinorIsNotAskedForAPreparer) {
  // Its get_factory answers its factory to any id: asked for the preparer, it would hand the factory.
  auto registry = registry_with({"sloppy_old_minor"});
  ASSERT_TRUE(registry.refused().empty()) << registry.refused().front().reason;
  ASSERT_EQ(registry.rules().size(), 5u);
  for (const auto& r : registry.rules()) {
    EXPECT_EQ(r.abi_minor, 3u);
    EXPECT_EQ(r.preparer, nullptr) << r.descriptor->id;
  }
}

struct RefusalCase {
  const char* variant;
  std::string reason_contains;
  ErrorCode code;
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
  EXPECT_EQ(registry.refused()[0].code, GetParam().code);
  // load_file reports the same reason with the same code.
  plugin_host::PluginRegistry again;
  const auto file = registry.refused()[0].path;
  auto loaded = again.load_file(file);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error().code, GetParam().code);
  EXPECT_EQ(loaded.error().message, file.string() + ": " + registry.refused()[0].reason);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, PluginRefusal,
    ::testing::Values(
        RefusalCase{"no_entry", "no entry symbol vigil_plugin_entry_v1", ErrorCode::VersionMismatch},
        RefusalCase{"abi_major_2", "built for ABI 2." + std::to_string(VIGIL_ABI_MINOR) + ", the host speaks ABI " + kHostAbi,
                    ErrorCode::VersionMismatch},
        RefusalCase{"declines_host", "declined host ABI " + kHostAbi, ErrorCode::VersionMismatch},
        RefusalCase{"init_fails", "deliberate init failure", ErrorCode::Internal},  // the plugin's own status
        RefusalCase{"needs_newer_minor", "needs host ABI 1.7 or newer", ErrorCode::VersionMismatch},
        RefusalCase{"bad_descriptor", "has no name", ErrorCode::PluginFailure},
        RefusalCase{"bad_param_default", "the default of broken is invalid", ErrorCode::PluginFailure},
        RefusalCase{"throw_in_entry", "the entry function threw a C++ exception", ErrorCode::PluginFailure},
        RefusalCase{"throw_in_init", "init threw a C++ exception", ErrorCode::PluginFailure},
        RefusalCase{"throw_in_get_factory", "get_factory threw a C++ exception", ErrorCode::PluginFailure},
        RefusalCase{"throw_in_count", "count threw a C++ exception", ErrorCode::PluginFailure},
        RefusalCase{"throw_in_descriptor", "descriptor threw a C++ exception", ErrorCode::PluginFailure}),
    [](const auto& info) { return std::string(info.param.variant); });

TEST(PluginLoader, DuplicateRulesAreRefusedAndTheFirstKept) {
  auto registry = registry_with({"good", "duplicate_id"});
  EXPECT_EQ(registry.rules().size(), 5u);
  ASSERT_EQ(registry.refused().size(), 1u);
  EXPECT_NE(registry.refused()[0].reason.find("is already provided by"), std::string::npos) << registry.refused()[0].reason;
  EXPECT_EQ(registry.refused()[0].code, ErrorCode::InvalidArgument);
  EXPECT_STREQ(registry.find("StepsRule")->descriptor->id, "vigil.test.StepsRule");
}

TEST(PluginLoader, GoesOnAfterARefusal) {
  test::ScratchDir dir;
  for (const char* v : {"init_fails", "good", "no_entry"})
    std::filesystem::copy_file(variant_dir(v) / ("libvigil_test_plugin_" + std::string(v) + ".so"),
                               dir.path() / ("lib" + std::string(v) + ".so"));
  plugin_host::PluginRegistry registry;
  registry.load_directory(dir.path());
  EXPECT_EQ(registry.rules().size(), 5u);
  EXPECT_EQ(registry.refused().size(), 2u);
}

TEST(PluginLoader, RefusesRelativeAndMissingPaths) {
  plugin_host::PluginRegistry registry;
  registry.load_directory("relative/plugins");
  registry.load_directory("/no/such/vigil/plugin/dir");
  auto file = registry.load_file("libfoo.so");
  ASSERT_FALSE(file.has_value());
  ASSERT_EQ(registry.refused().size(), 3u);
  EXPECT_NE(registry.refused()[0].reason.find("absolute"), std::string::npos);
  EXPECT_NE(registry.refused()[1].reason.find("no such plugin directory"), std::string::npos);
  EXPECT_NE(registry.refused()[2].reason.find("absolute paths only"), std::string::npos);
  EXPECT_EQ(registry.refused()[0].code, ErrorCode::InvalidArgument);
  EXPECT_EQ(registry.refused()[1].code, ErrorCode::Io);
  EXPECT_EQ(file.error().code, ErrorCode::InvalidArgument);
}

// version.h: a plugin declines a host it cannot use in its entry function; the SDK's declines another
// ABI major, before any init.
TEST(PluginLoader, TheSdkEntryDeclinesAnotherMajor) {
  const auto file = variant_dir("sdk_extensions") / "libvigil_test_plugin_sdk_extensions.so";
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  auto entry = reinterpret_cast<vigil_plugin_entry_fn>(::dlsym(handle, VIGIL_PLUGIN_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  EXPECT_NE(entry(VIGIL_ABI_MAJOR, VIGIL_ABI_MINOR), nullptr);
  EXPECT_NE(entry(VIGIL_ABI_MAJOR, 0), nullptr);  // any minor
  EXPECT_EQ(entry(VIGIL_ABI_MAJOR + 1, 0), nullptr);
  ::dlclose(handle);
}

TEST(PluginLoader, KeepsTheBuildInfo) {
  auto registry = registry_with({"good", "sdk_extensions"});
  ASSERT_NE(registry.find("StepsRule"), nullptr);
  EXPECT_EQ(registry.find("StepsRule")->build_info, "test plugin");
  ASSERT_NE(registry.find("ExtensionUser"), nullptr);
  EXPECT_NE(registry.find("ExtensionUser")->build_info.find("vigil-sdk"), std::string::npos)
      << registry.find("ExtensionUser")->build_info;
}

// ---- host extensions, and init once per loaded library ----

// The test-only probe extension: counts the init and deinit calls each plugin reports.
struct ProbeCounts {
  std::mutex mu;
  std::map<std::string, int> inits, deinits;
  int init_count(const std::string& id) {
    std::lock_guard lock(mu);
    return inits[id];
  }
  int deinit_count(const std::string& id) {
    std::lock_guard lock(mu);
    return deinits[id];
  }
};
ProbeCounts g_probe_counts;

void VIGIL_CALL probe_init_called(const char* id) {
  std::lock_guard lock(g_probe_counts.mu);
  ++g_probe_counts.inits[id];
}
void VIGIL_CALL probe_deinit_called(const char* id) {
  std::lock_guard lock(g_probe_counts.mu);
  ++g_probe_counts.deinits[id];
}
const vigil_test_probe_ext kProbe{sizeof(vigil_test_probe_ext), probe_init_called, probe_deinit_called};

const std::string kRawProbePlugin = "vigil.test.variant.probes_extensions";
const std::string kSdkProbePlugin = "vigil.test.sdk-extensions";

const void* host_extension(const char* id) { return plugin_host::host_api()->get_extension(plugin_host::host_api(), id); }

TEST(HostExtensions, APluginAskingForAnExtensionTheHostLacksGetsNullAndLoads) {
  EXPECT_EQ(host_extension(VIGIL_TEST_MISSING_EXTENSION_ID), nullptr);
  EXPECT_EQ(host_extension(VIGIL_TEST_PROBE_EXTENSION_ID), nullptr);  // registered by tests only
  EXPECT_EQ(host_extension(nullptr), nullptr);
  const int raw_inits = g_probe_counts.init_count(kRawProbePlugin);
  auto registry = registry_with({"probes_extensions", "sdk_extensions"});
  ASSERT_TRUE(registry.refused().empty()) << registry.refused().front().reason;
  EXPECT_EQ(registry.rules().size(), 6u);  // five raw test rules and the SDK plugin's one
  EXPECT_EQ(g_probe_counts.init_count(kRawProbePlugin), raw_inits);  // no probe, nothing reported
}

TEST(HostExtensions, AnExtensionTheHostRegistersReachesRawAndSdkPlugins) {
  const int raw_inits = g_probe_counts.init_count(kRawProbePlugin);
  const int raw_deinits = g_probe_counts.deinit_count(kRawProbePlugin);
  const int sdk_inits = g_probe_counts.init_count(kSdkProbePlugin);
  {
    plugin_host::ExtensionRegistration probe(VIGIL_TEST_PROBE_EXTENSION_ID, &kProbe);
    EXPECT_EQ(host_extension(VIGIL_TEST_PROBE_EXTENSION_ID), &kProbe);
    EXPECT_EQ(host_extension(VIGIL_TEST_MISSING_EXTENSION_ID), nullptr);
    {
      auto registry = registry_with({"probes_extensions", "sdk_extensions"});
      ASSERT_TRUE(registry.refused().empty()) << registry.refused().front().reason;
      EXPECT_EQ(g_probe_counts.init_count(kRawProbePlugin), raw_inits + 1);
      EXPECT_EQ(g_probe_counts.init_count(kSdkProbePlugin), sdk_inits + 1);
      EXPECT_EQ(g_probe_counts.deinit_count(kRawProbePlugin), raw_deinits);
    }
    EXPECT_EQ(g_probe_counts.deinit_count(kRawProbePlugin), raw_deinits + 1);  // unloaded with its registry
  }
  EXPECT_EQ(host_extension(VIGIL_TEST_PROBE_EXTENSION_ID), nullptr);  // the registration ended
}

TEST(HostExtensions, IdsAreVersionedAndOfferedOnce) {
  for (const char* good : {"vigil.profiler/1", "vigil.test-probe/12", "com.acme.my_ext/3"})
    EXPECT_TRUE(plugin_host::valid_extension_id(good)) << good;
  for (const char* bad : {"", "vigil.profiler", "vigil.profiler/", "vigil.profiler/0", "vigil.profiler/01",
                          "vigil.profiler/1a", "profiler/1", ".vigil/1", "vigil./1", "Vigil.Profiler/1",
                          "vigil.pro filer/1", "/1"})
    EXPECT_FALSE(plugin_host::valid_extension_id(bad)) << bad;
  EXPECT_THROW(plugin_host::ExtensionRegistration("vigil.profiler", &kProbe), std::invalid_argument);
  EXPECT_THROW(plugin_host::ExtensionRegistration("vigil.test-probe/1", nullptr), std::invalid_argument);
  plugin_host::ExtensionRegistration probe(VIGIL_TEST_PROBE_EXTENSION_ID, &kProbe);
  EXPECT_THROW(plugin_host::ExtensionRegistration(VIGIL_TEST_PROBE_EXTENSION_ID, &kProbe), std::invalid_argument);
  EXPECT_EQ(host_extension(VIGIL_TEST_PROBE_EXTENSION_ID), &kProbe);  // the first one stands
}

// plugin.h: init is called once, before anything else, and deinit once after the last use, however
// many registries load the library and through whichever path, at the same time or not.
TEST(PluginLoader, InitRunsOncePerLoadedLibrary) {
  plugin_host::ExtensionRegistration probe(VIGIL_TEST_PROBE_EXTENSION_ID, &kProbe);
  const int inits = g_probe_counts.init_count(kRawProbePlugin);
  const int deinits = g_probe_counts.deinit_count(kRawProbePlugin);
  const auto file = variant_dir("probes_extensions") / "libvigil_test_plugin_probes_extensions.so";
  test::ScratchDir dir;
  std::filesystem::create_symlink(file, dir.path() / "libalias.so");
  {
    std::vector<plugin_host::PluginRegistry> registries(6);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < registries.size(); ++i)
      threads.emplace_back([&, i] {
        (void)registries[i].load_file(i % 2 ? file : dir.path() / "libalias.so");
      });
    for (auto& t : threads) t.join();
    for (const auto& r : registries) {
      ASSERT_TRUE(r.refused().empty()) << r.refused().front().reason;
      EXPECT_EQ(r.rules().size(), 5u);
    }
    EXPECT_EQ(g_probe_counts.init_count(kRawProbePlugin), inits + 1);
    registries.resize(1);  // five users gone, one left: still initialised
    EXPECT_EQ(g_probe_counts.deinit_count(kRawProbePlugin), deinits);
  }
  EXPECT_EQ(g_probe_counts.deinit_count(kRawProbePlugin), deinits + 1);
  // Loaded again after its deinit: a fresh init.
  auto again = registry_with({"probes_extensions"});
  EXPECT_EQ(g_probe_counts.init_count(kRawProbePlugin), inits + 2);
}

TEST(PluginLoader, ThrowingDeinitIsContained) {
  auto registry = std::make_unique<plugin_host::PluginRegistry>(registry_with({"throw_in_deinit"}));
  EXPECT_EQ(registry->rules().size(), 5u);
  registry.reset();  // unloading calls deinit, which throws: no crash
  SUCCEED();
}

TEST(PluginLoader, SearchPathOrder) {
  ::setenv("VIGIL_PLUGIN_PATH", "/opt/a:/opt/b::/opt/a", 1);
  auto dirs = plugin_host::plugin_directories({"/cli/dir"});
  ::unsetenv("VIGIL_PLUGIN_PATH");
  ASSERT_GE(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], "/cli/dir");
  EXPECT_EQ(dirs[1], "/opt/a");
  EXPECT_EQ(dirs[2], "/opt/b");
}

// Plugins load only from absolute folders: a relative --plugins or VIGIL_PLUGIN_PATH entry (or an
// empty one, which a shell PATH reads as ".") would load whatever the working directory holds.
TEST(PluginLoader, RelativeSearchPathEntriesAreRefusedNotResolved) {
  test::ScratchDir dir;
  std::filesystem::create_directories(dir.path() / "plugins");
  std::filesystem::copy_file(variant_dir("good") / "libvigil_test_plugin_good.so", dir.path() / "plugins" / "libgood.so");
  std::filesystem::copy_file(variant_dir("good") / "libvigil_test_plugin_good.so", dir.path() / "libgood.so");
  const auto previous_cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());  // the plugins are now reachable by relative paths
  ::setenv("VIGIL_PLUGIN_PATH", "plugins::.", 1);
  plugin_host::PluginRegistry registry;
  for (const auto& d : plugin_host::plugin_directories({"plugins", "./plugins"})) registry.load_directory(d);
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
  Result<plugin_host::BoundParams> bind(std::map<std::string, std::string> given) {
    return plugin_host::BoundParams::bind(*rule, given, "my-rule");
  }
  void expect_refused(std::map<std::string, std::string> given, const std::string& part) {
    auto b = bind(std::move(given));
    ASSERT_FALSE(b.has_value());
    EXPECT_EQ(b.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(b.error().message.find(part), std::string::npos) << b.error().message;
    EXPECT_NE(b.error().message.find("my-rule"), std::string::npos) << b.error().message;
  }
  plugin_host::PluginRegistry registry;
  const vigil_rule_descriptor* rule = nullptr;
};

TEST_F(Params, DefaultsAndTypedValues) {
  auto b = bind({{"needed", "x"}, {"ratio", "0.25"}, {"flag", "TRUE"}, {"mode", "eval"}});
  ASSERT_VIGIL_OK(b);
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
    auto p = plugin_host::parse_param_value(spec, bad);
    ASSERT_FALSE(p.has_value()) << bad;
    EXPECT_NE(p.error().find("not an accepted regular expression"), std::string::npos) << p.error();
  }
  for (const std::string& good : {"a{2,3}"s, "(x)\\1"s, "layer_1234567890123"s, std::string(4096, 'a')})
    EXPECT_TRUE(plugin_host::parse_param_value(spec, good).has_value()) << good;
}

TEST(ParamList, SplitsOnCommas) {
  vigil_param_spec spec{sizeof(spec), "names", VIGIL_PARAM_STRING_LIST, 0, nullptr, NAN, NAN, nullptr, ""};
  auto p = plugin_host::parse_param_value(spec, " a, b ,,c ");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->list, (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace vigil
