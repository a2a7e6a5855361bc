// Python rule files (source_s3_uri) run code as plugin libraries do, so they pass the plugin loader's
// trust check: a world-writable rule file, or one in a folder other users may write, ran with the
// evaluator's rights (root's, in a container); a relative path ran whatever the working directory held.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "evaluate/evaluator.h"
#include "test_support.h"

namespace vigil::evaluate {
namespace {

namespace fs = std::filesystem;

// The error resolving a job of one Python rule from `source` gives (empty when it resolves).
std::string resolve_error(const plugin_host::PluginRegistry& registry, const std::string& source) {
  auto job = parse_job_json(fmt::format(R"({{"DebugRuleConfigurations": [{{"RuleConfigurationName": "R",
      "RuleParameters": {{"rule_to_invoke": "MyRule", "source_s3_uri": "{}"}}}}]}})", source),
                            "/tmp", "/tmp");
  EXPECT_TRUE(job.has_value()) << (job ? "" : job.error().message);
  if (!job) return "no job";
  auto resolved = resolve_job(registry, *job);
  return resolved ? std::string() : resolved.error().message;
}

class RuleFileTrust : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir.path() / "rules");
    std::ofstream(rule()) << "class MyRule: pass\n";
    fs::permissions(rule(), fs::perms(0644));
  }
  fs::path rule() const { return dir.path() / "rules" / "r.py"; }
  test::ScratchDir dir;
  plugin_host::PluginRegistry registry{plugin_host::LoadOptions{}};
};

// Resolving goes on to look for the Python rule plugin, which these tests do not load.
constexpr std::string_view kPassedTheCheck = "need the Python rule plugin";

TEST_F(RuleFileTrust, ATrustedRuleFilePassesTheCheck) {
  EXPECT_NE(resolve_error(registry, rule().string()).find(kPassedTheCheck), std::string::npos);
  EXPECT_NE(resolve_error(registry, "file://" + rule().string()).find(kPassedTheCheck), std::string::npos);
}

TEST_F(RuleFileTrust, AWorldWritableRuleFileIsRefused) {
  fs::permissions(rule(), fs::perms(0666));
  const std::string error = resolve_error(registry, rule().string());
  EXPECT_NE(error.find("not trusted: the file"), std::string::npos) << error;
  EXPECT_NE(error.find("--allow-insecure-plugins"), std::string::npos) << error;
}

TEST_F(RuleFileTrust, ARuleFileInAFolderEveryoneMayWriteIsRefused) {
  fs::permissions(dir.path() / "rules", fs::perms(0777));
  const std::string error = resolve_error(registry, rule().string());
  EXPECT_NE(error.find("not trusted: the folder " + (dir.path() / "rules").string()), std::string::npos) << error;
  // Also where the file is not there yet: whoever may write the folder could put it there.
  const std::string missing = resolve_error(registry, (dir.path() / "rules" / "later.py").string());
  EXPECT_NE(missing.find("not trusted: the folder"), std::string::npos) << missing;
}

TEST_F(RuleFileTrust, ARelativeRuleFileIsRefusedNotResolved) {
  const std::string error = resolve_error(registry, "rules/r.py");
  EXPECT_NE(error.find("relative path"), std::string::npos) << error;
}

TEST_F(RuleFileTrust, AllowInsecurePluginsRunsItKnowingly) {
  fs::permissions(rule(), fs::perms(0666));
  const plugin_host::PluginRegistry allowing{plugin_host::LoadOptions{.allow_insecure = true}};
  EXPECT_NE(resolve_error(allowing, rule().string()).find(kPassedTheCheck), std::string::npos);
}

TEST(RuleFileAnchor, RelativeRuleFilesAreReadFromTheJobFilesFolder) {
  auto job = parse_job_json(R"({"DebugRuleConfigurations": [
      {"RuleConfigurationName": "A", "RuleParameters": {"rule_to_invoke": "R", "source_s3_uri": "rules.py"}},
      {"RuleConfigurationName": "B", "RuleParameters": {"rule_to_invoke": "R", "source_s3_uri": "file://../r/b.py"}},
      {"RuleConfigurationName": "C", "RuleParameters": {"rule_to_invoke": "R", "source_s3_uri": "/abs/c.py"}},
      {"RuleConfigurationName": "D", "RuleParameters": {"rule_to_invoke": "R", "source_s3_uri": "s3://b/d.py"}}]})",
                            "/tmp", "/tmp");
  ASSERT_TRUE(job) << job.error().message;
  anchor_rule_files(*job, "/jobs/one/job.json");
  EXPECT_EQ(job->rules[0].source, "/jobs/one/rules.py");
  EXPECT_EQ(job->rules[1].source, "/jobs/r/b.py");
  EXPECT_EQ(job->rules[2].source, "/abs/c.py");
  EXPECT_EQ(job->rules[3].source, "s3://b/d.py");
}

}  // namespace
}  // namespace vigil::evaluate
