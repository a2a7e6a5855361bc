// Where a training job's outputs go (jobs/job_outputs.h): output locations (s3://, file://), the
// plan of a request's outputs under <S3OutputPath>/<job>/ as sagemaker-api §3.1 and §4.6 lay them
// out, and the validation of the S3OutputPath members that vigil train can and cannot write.
#include "jobs/job_outputs.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "request_examples.h"
#include "test_support.h"

namespace vigil::jobs {
namespace {

using nlohmann::json;

using test_requests::minimal;
using test_requests::rule;

TrainingJobRequest parse(const json& request) {
  auto parsed = parse_training_job_request(request.dump());
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().message);
  return parsed ? std::move(*parsed) : TrainingJobRequest{};
}

std::string refusal(const json& request) {
  auto parsed = parse_training_job_request(request.dump());
  return parsed ? "" : parsed.error().message;
}

TEST(OutputLocation, S3AndFileLocations) {
  auto s3 = parse_output_location("s3://bucket/jobs/", "/work");
  ASSERT_VIGIL_OK(s3);
  EXPECT_FALSE(s3->local);
  EXPECT_EQ(s3->uri(), "s3://bucket/jobs");
  EXPECT_EQ(s3->child("job-1/debug-output").uri(), "s3://bucket/jobs/job-1/debug-output");
  auto whole_bucket = parse_output_location("s3://bucket", "/work");
  ASSERT_VIGIL_OK(whole_bucket);
  EXPECT_EQ(whole_bucket->child("job-1/output").uri(), "s3://bucket/job-1/output");

  auto absolute = parse_output_location("file:///data/out/", "/work");
  ASSERT_VIGIL_OK(absolute);
  EXPECT_TRUE(absolute->local);
  EXPECT_EQ(absolute->folder, fs::path("/data/out"));
  EXPECT_EQ(absolute->uri(), "file:///data/out");
  EXPECT_EQ(absolute->child("job-1/output").uri(), "file:///data/out/job-1/output");
  // Relative to where vigil train runs, as SageMaker local mode reads "file://out".
  auto relative = parse_output_location("file://./runs/../out", "/work/here");
  ASSERT_VIGIL_OK(relative);
  EXPECT_EQ(relative->folder, fs::path("/work/here/out"));
}

TEST(OutputLocation, WhatCannotBeWrittenIsNamed) {
  EXPECT_EQ(output_location_problem("s3://bucket/p"), std::nullopt);
  EXPECT_EQ(output_location_problem("file:///x"), std::nullopt);
  auto problem = [](std::string_view text) { return output_location_problem(text).value_or("(accepted)"); };
  EXPECT_EQ(problem("https://bucket.s3.amazonaws.com/p"),
            "Member must be an s3://bucket/prefix or file://folder location: vigil train does not upload to https:// "
            "addresses (name the bucket as s3://bucket/prefix)");
  EXPECT_EQ(problem("s3://Bad_Bucket/p"),
            "Member must name an S3 location ('s3://Bad_Bucket/p' is not an S3 location: a bucket name holds only "
            "lowercase letters, digits, '.' and '-')");
  EXPECT_EQ(problem("s3://bucket/a//b"),
            "Member must name an S3 location ('s3://bucket/a//b' is not an S3 location: the key prefix has an empty, "
            "'.' or '..' segment)");
  EXPECT_EQ(problem("file://"), "Member must name a folder after file://");
  EXPECT_EQ(problem("gs://bucket/p"), "Member must be an s3://bucket/prefix or file://folder location");
  auto parsed = parse_output_location("https://bucket.s3.amazonaws.com/p", "/");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::InvalidArgument);
}

TEST(JobOutputs, TheSpecLayoutForEveryOutput) {
  json r = minimal();
  r["DebugHookConfig"] = {{"S3OutputPath", "s3://bucket/debug/"}};
  r["TensorBoardOutputConfig"] = {{"S3OutputPath", "s3://bucket/tb"}};
  r["ProfilerConfig"] = {{"S3OutputPath", "s3://bucket/profiler"}};
  r["DebugRuleConfigurations"] = {rule("Vanishing"), rule("Own")};
  r["DebugRuleConfigurations"][1]["S3OutputPath"] = "s3://rules-bucket/r";
  r["ProfilerRuleConfigurations"] = {rule("ProfilerReport")};
  r["ProfilerRuleConfigurations"][0]["RuleParameters"] = {{"rule_to_invoke", "ProfilerReport"}};
  const JobPaths paths = job_paths("/jobs", "job-1");
  auto plan = plan_job_outputs(parse(r), paths, "/work");
  ASSERT_VIGIL_OK(plan);
  std::vector<std::tuple<std::string, fs::path, std::string, UploadTime>> got;
  for (const auto& o : *plan) got.emplace_back(o.name, o.local, o.destination.uri(), o.when);
  const std::vector<std::tuple<std::string, fs::path, std::string, UploadTime>> expected = {
      {"debug-output", paths.debug_output(), "s3://bucket/debug/job-1/debug-output", UploadTime::Live},
      {"profiler-output", paths.profiler_output(), "s3://bucket/profiler/job-1/profiler-output", UploadTime::Live},
      {"tensorboard-output", paths.tensorboard_output(), "s3://bucket/tb/job-1/tensorboard-output", UploadTime::Live},
      {"rule-output/Vanishing", paths.rule_output("Vanishing"), "s3://bucket/out/job-1/rule-output/Vanishing", UploadTime::Live},
      {"rule-output/Own", paths.rule_output("Own"), "s3://rules-bucket/r/job-1/rule-output/Own", UploadTime::Live},
      {"rule-output/ProfilerReport", paths.rule_output("ProfilerReport"),
       "s3://bucket/out/job-1/rule-output/ProfilerReport", UploadTime::Live},
      {"output", fs::path("/jobs/job-1/output/output"), "s3://bucket/out/job-1/output", UploadTime::AtEnd},
  };
  EXPECT_EQ(got, expected);
  EXPECT_EQ(paths.model_archive(), fs::path("/jobs/job-1/output/output/model.tar.gz"));
  EXPECT_EQ(paths.output_archive(), fs::path("/jobs/job-1/output/output/output.tar.gz"));
}

TEST(JobOutputs, DefaultsAndLocalFolders) {
  const JobPaths paths = job_paths("/jobs", "job-1");
  // Without a hook, profiler or rules: only the archives. A ProfilerConfig without S3OutputPath
  // goes beside them; a disabled profiler writes nothing to upload.
  json r = minimal();
  r["OutputDataConfig"]["S3OutputPath"] = "file://runs";
  auto plan = plan_job_outputs(parse(r), paths, "/home/u");
  ASSERT_VIGIL_OK(plan);
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].destination.uri(), "file:///home/u/runs/job-1/output");
  EXPECT_TRUE((*plan)[0].destination.local);

  r["ProfilerConfig"] = {{"ProfilingIntervalInMilliseconds", 500}};
  plan = plan_job_outputs(parse(r), paths, "/home/u");
  ASSERT_VIGIL_OK(plan);
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[0].destination.uri(), "file:///home/u/runs/job-1/profiler-output");

  r["ProfilerConfig"]["DisableProfiler"] = true;
  plan = plan_job_outputs(parse(r), paths, "/home/u");
  ASSERT_VIGIL_OK(plan);
  EXPECT_EQ(plan->size(), 1u);
}

TEST(JobOutputs, CompressionType) {
  json r = minimal();
  EXPECT_TRUE(compresses_model(parse(r)));
  r["OutputDataConfig"]["CompressionType"] = "GZIP";
  EXPECT_TRUE(compresses_model(parse(r)));
  r["OutputDataConfig"]["CompressionType"] = "NONE";
  EXPECT_FALSE(compresses_model(parse(r)));
}

TEST(JobOutputs, FileLocationsAreAcceptedOnEveryOutputPath) {
  json r = minimal();
  r["OutputDataConfig"]["S3OutputPath"] = "file:///data/out";
  r["DebugHookConfig"] = {{"S3OutputPath", "file://out"}};
  r["TensorBoardOutputConfig"] = {{"S3OutputPath", "file://out"}};
  r["ProfilerConfig"] = {{"S3OutputPath", "file://out"}};
  r["DebugRuleConfigurations"] = {rule("Vanishing")};
  r["DebugRuleConfigurations"][0]["S3OutputPath"] = "file://rules";
  EXPECT_EQ(refusal(r), "");
  // Not where SageMaker takes only S3: the checkpoint and the input channels stay S3Uri.
  r["CheckpointConfig"] = {{"S3Uri", "file:///ckpt"}};
  EXPECT_EQ(refusal(r),
            "ValidationException: 1 validation error detected: Value 'file:///ckpt' at 'checkpointConfig.s3Uri' failed "
            "to satisfy constraint: Member must satisfy regular expression pattern: (https|s3)://([^/]+)/?(.*)");
}

TEST(JobOutputs, OutputPathsThatCannotBeWrittenAreRefusedInTheServiceFormat) {
  json r = minimal();
  r["OutputDataConfig"]["S3OutputPath"] = "https://bucket.s3.amazonaws.com/out";
  r["DebugHookConfig"] = {{"S3OutputPath", "s3://Bucket/x"}};
  r["DebugRuleConfigurations"] = {rule("a/b")};
  EXPECT_EQ(refusal(r),
            "ValidationException: 3 validation errors detected: Value 'https://bucket.s3.amazonaws.com/out' at "
            "'outputDataConfig.s3OutputPath' failed to satisfy constraint: Member must be an s3://bucket/prefix or "
            "file://folder location: vigil train does not upload to https:// addresses (name the bucket as "
            "s3://bucket/prefix); Value 's3://Bucket/x' at 'debugHookConfig.s3OutputPath' failed to satisfy "
            "constraint: Member must name an S3 location ('s3://Bucket/x' is not an S3 location: a bucket name holds "
            "only lowercase letters, digits, '.' and '-'); Value 'a/b' at "
            "'debugRuleConfigurations.1.member.ruleConfigurationName' failed to satisfy constraint: Member must name "
            "one folder (rule-output/<RuleConfigurationName>/): not '.' or '..', no '/'");
  // Other schemes fail SageMaker's own pattern first.
  r = minimal();
  r["OutputDataConfig"]["S3OutputPath"] = "gs://bucket/out";
  EXPECT_EQ(refusal(r),
            "ValidationException: 1 validation error detected: Value 'gs://bucket/out' at 'outputDataConfig.s3OutputPath' "
            "failed to satisfy constraint: Member must satisfy regular expression pattern: (https|s3)://([^/]+)/?(.*)");
  for (const char* name : {".", ".."}) {
    r = minimal();
    r["DebugRuleConfigurations"] = {rule(name)};
    EXPECT_NE(refusal(r).find("Member must name one folder"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace vigil::jobs
