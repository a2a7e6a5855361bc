// The job folder's paths, each host's environment (the SageMaker training toolkit's variables,
// the config file variables, torch.distributed's) and the config files under input/config.
#include "jobs/container_environment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/process.h"
#include "jobs/job_paths.h"
#include "profiler/profiler_config.h"
#include "test_support.h"

namespace vigil::jobs {
namespace {

using nlohmann::json;

const JobPaths kPaths = job_paths("/var/vigil/jobs", "job-1");

TrainingJobRequest parse(const json& request) {
  auto parsed = parse_training_job_request(request.dump());
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().message);
  return parsed ? std::move(*parsed) : TrainingJobRequest{};
}

json base_request() {
  return {{"TrainingJobName", "job-1"},
          {"RoleArn", "arn:aws:iam::111122223333:role/SageMakerExecRole"},
          {"OutputDataConfig", {{"S3OutputPath", "s3://bucket/out/"}}}};
}

// A two-host job with every kind of hyperparameter value, two channels, the hook, TensorBoard and
// the profiler.
json two_host_request() {
  json r = base_request();
  r["ResourceConfig"] = {{"InstanceType", "ml.g5.xlarge"}, {"InstanceCount", 2}, {"VolumeSizeInGB", 50}};
  r["AlgorithmSpecification"] = {{"TrainingImage", "pytorch-training:1.13.1"}, {"TrainingInputMode", "File"}};
  r["HyperParameters"] = {{"batch-size", "128"},       {"epochs", "6"},           {"lr", "0.1"},
                          {"use-amp", "true"},         {"arch", "resnet"},        {"layers", "[1, 2]"},
                          {"opts", R"({"b": 1, "a": "x"})"}, {"x", "7"},           {"names", R"(["a", "it's"])"},
                          {"sagemaker_program", "train.py"}, {"sagemaker_custom", "1"}};
  r["Environment"] = {{"USE_SMDEBUG", "0"}, {"RANK", "9"}, {"SM_HOSTS", "x"}};
  r["InputDataConfig"] = {
      {{"ChannelName", "train"}, {"ContentType", "application/x-image"},
       {"DataSource", {{"S3DataSource", {{"S3DataType", "S3Prefix"}, {"S3Uri", "s3://bucket/train"}}}}}},
      {{"ChannelName", "test"}, {"InputMode", "Pipe"},
       {"DataSource", {{"S3DataSource", {{"S3DataType", "S3Prefix"}, {"S3Uri", "s3://bucket/test"}, {"S3DataDistributionType", "ShardedByS3Key"}}}}}}};
  r["DebugHookConfig"] = {{"S3OutputPath", "s3://bucket/out/"},
                          {"LocalPath", "/opt/ml/output/tensors"},
                          {"HookParameters", {{"save_interval", "100"}}},
                          {"CollectionConfigurations", {{{"CollectionName", "losses"}, {"CollectionParameters", {{"train.save_interval", "50"}}}},
                                                        {{"CollectionName", "gradients"}}}}};
  r["TensorBoardOutputConfig"] = {{"S3OutputPath", "s3://bucket/tb/"}, {"LocalPath", "/opt/ml/output/tensorboard"}};
  r["ProfilerConfig"] = {{"S3OutputPath", "s3://bucket/out/"},
                         {"ProfilingIntervalInMilliseconds", 500},
                         {"ProfilingParameters", {{"DataloaderProfilingConfig", R"({"StartStep": 7, "NumSteps": 2, "MetricsRegex": ".*", })"},
                                                  {"LocalPath", "/opt/ml/output/profiler/"}}},
                         {"DisableProfiler", false}};
  return r;
}

TEST(JobPaths, Layout) {
  const JobPaths p = job_paths("/jobs", "resnet-1");
  EXPECT_EQ(p.root, fs::path("/jobs/resnet-1"));
  EXPECT_EQ(p.request(), fs::path("/jobs/resnet-1/request.json"));
  EXPECT_EQ(p.state(), fs::path("/jobs/resnet-1/state.json"));
  EXPECT_EQ(p.rule_status(), fs::path("/jobs/resnet-1/rule-status.json"));
  EXPECT_EQ(p.output(), fs::path("/jobs/resnet-1/output"));
  EXPECT_EQ(p.debug_output(), fs::path("/jobs/resnet-1/output/debug-output"));
  EXPECT_EQ(p.profiler_output(), fs::path("/jobs/resnet-1/output/profiler-output"));
  EXPECT_EQ(p.tensorboard_output(), fs::path("/jobs/resnet-1/output/tensorboard-output"));
  EXPECT_EQ(p.rule_output("VanishingGradient"), fs::path("/jobs/resnet-1/output/rule-output/VanishingGradient"));
  EXPECT_EQ(p.host_root(0), fs::path("/jobs/resnet-1/hosts/algo-1"));
  EXPECT_EQ(p.host_config_dir(1), fs::path("/jobs/resnet-1/hosts/algo-2/input/config"));
  EXPECT_EQ(p.log_dir(), fs::path("/jobs/resnet-1/logs"));
  EXPECT_EQ(host_name(0), "algo-1");
  EXPECT_EQ(host_name(11), "algo-12");
}

TEST(JobPaths, ContainerPathsMapIntoTheHostRoot) {
  const JobPaths p = job_paths("/jobs", "j");
  const fs::path host = p.host_root(1);
  EXPECT_EQ(map_container_path(p, 1, "/opt/ml/checkpoints"), host / "checkpoints");
  EXPECT_EQ(map_container_path(p, 1, "/opt/ml/checkpoints/"), host / "checkpoints");
  EXPECT_EQ(map_container_path(p, 1, "/opt/ml/input/data/train"), host / "input/data/train");
  EXPECT_EQ(map_container_path(p, 1, "/opt/ml"), host);
  EXPECT_EQ(map_container_path(p, 1, "/opt/ml/"), host);
  EXPECT_EQ(map_container_path(p, 1, "/opt/ml/a/../b"), host / "b");
  EXPECT_EQ(map_container_path(p, 1, "/opt/mlx/a"), fs::path("/opt/mlx/a"));
  EXPECT_EQ(map_container_path(p, 1, "/opt/ml/../etc"), fs::path("/opt/etc"));
  EXPECT_EQ(map_container_path(p, 1, "/tmp/ckpt"), fs::path("/tmp/ckpt"));
  EXPECT_EQ(map_container_path(p, 1, "ckpt/run"), host / "ckpt/run");
}

TEST(ContainerEnvironment, SecondHostOfATwoHostJob) {
  const TrainingJobRequest request = parse(two_host_request());
  const std::string arn = "arn:aws:sagemaker:local:000000000000:training-job/job-1";
  auto env = host_environment(request, kPaths, 1, 29500, arn);
  const fs::path host = kPaths.host_root(1);

  EXPECT_EQ(env["SM_CURRENT_HOST"], "algo-2");
  EXPECT_EQ(env["SM_HOSTS"], R"(["algo-1","algo-2"])");
  EXPECT_EQ(env["SM_NETWORK_INTERFACE_NAME"], "lo");
  EXPECT_EQ(env["RANK"], "1");  // the request's RANK=9 does not replace it
  EXPECT_EQ(env["WORLD_SIZE"], "2");
  EXPECT_EQ(env["LOCAL_RANK"], "0");
  EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(env["USE_SMDEBUG"], "0");  // the request's other variables pass

  // Hyperparameters decoded as the toolkit decodes them; sagemaker_* left out.
  EXPECT_EQ(env["SM_HPS"],
            R"({"arch":"resnet","batch-size":128,"epochs":6,"layers":[1,2],"lr":0.1,"names":["a","it's"],)"
            R"("opts":{"a":"x","b":1},"use-amp":true,"x":7})");
  EXPECT_EQ(env["SM_HP_BATCH-SIZE"], "128");
  EXPECT_EQ(env["SM_HP_USE-AMP"], "true");
  EXPECT_EQ(env["SM_HP_ARCH"], "resnet");
  EXPECT_EQ(env["SM_HP_OPTS"], R"({"a":"x","b":1})");
  EXPECT_EQ(env["SM_HP_LR"], "0.1");
  EXPECT_FALSE(env.contains("SM_HP_SAGEMAKER_PROGRAM"));
  EXPECT_EQ(env["SM_USER_ARGS"],
            R"(["--arch","resnet","--batch-size","128","--epochs","6","--layers","[1, 2]","--lr","0.1",)"
            R"("--names","['a', \"it's\"]","--opts","a=x,b=1","--use-amp","True","-x","7"])");
  EXPECT_EQ(env["SM_FRAMEWORK_PARAMS"], R"({"sagemaker_custom":1})");
  EXPECT_EQ(env["SM_USER_ENTRY_POINT"], "train.py");
  EXPECT_EQ(env["SM_MODULE_NAME"], "train");
  EXPECT_EQ(env["SM_LOG_LEVEL"], "20");

  // Channels and folders: host paths, not /opt/ml.
  EXPECT_EQ(env["SM_CHANNELS"], R"(["test","train"])");
  EXPECT_EQ(env["SM_CHANNEL_TRAIN"], (host / "input/data/train").string());
  EXPECT_EQ(env["SM_CHANNEL_TEST"], (host / "input/data/test").string());
  EXPECT_EQ(env["SM_INPUT_DATA_CONFIG"],
            R"({"test":{"RecordWrapperType":"None","S3DistributionType":"ShardedByS3Key","TrainingInputMode":"Pipe"},)"
            R"("train":{"ContentType":"application/x-image","RecordWrapperType":"None","S3DistributionType":"FullyReplicated","TrainingInputMode":"File"}})");
  EXPECT_EQ(env["SM_MODEL_DIR"], (host / "model").string());
  EXPECT_EQ(env["SM_OUTPUT_DIR"], (host / "output").string());
  EXPECT_EQ(env["SM_OUTPUT_DATA_DIR"], (host / "output/data").string());
  EXPECT_EQ(env["SM_INPUT_DIR"], (host / "input").string());
  EXPECT_EQ(env["SM_INPUT_CONFIG_DIR"], kPaths.host_config_dir(1).string());
  EXPECT_EQ(env["SM_NUM_GPUS"], "0");
  EXPECT_GE(std::stoi(env["SM_NUM_CPUS"]), 1);
  EXPECT_EQ(env["TRAINING_JOB_NAME"], "job-1");
  EXPECT_EQ(env["TRAINING_JOB_ARN"], arn);

  const json resources = json::parse(env["SM_RESOURCE_CONFIG"]);
  EXPECT_EQ(resources["current_host"], "algo-2");
  EXPECT_EQ(resources["hosts"], json::array({"algo-1", "algo-2"}));
  EXPECT_EQ(resources["current_instance_type"], "ml.g5.xlarge");
  EXPECT_EQ(resources["network_interface_name"], "lo");
  EXPECT_EQ(env["SM_CURRENT_INSTANCE_TYPE"], "ml.g5.xlarge");

  const json training_env = json::parse(env["SM_TRAINING_ENV"]);
  EXPECT_EQ(training_env["current_host"], "algo-2");
  EXPECT_EQ(training_env["is_master"], false);
  EXPECT_EQ(training_env["master_hostname"], "algo-1");
  EXPECT_EQ(training_env["hyperparameters"]["batch-size"], 128);
  EXPECT_EQ(training_env["channel_input_dirs"]["train"], (host / "input/data/train").string());
  EXPECT_EQ(training_env["resource_config"], resources);
  EXPECT_EQ(training_env["job_name"], "job-1");

  // The config file variables name files this host gets.
  const auto files = container_config_files(request, kPaths, 1);
  for (const char* variable : {"SMDEBUG_CONFIG_FILE_PATH", "TENSORBOARD_CONFIG_FILE_PATH", "SMPROFILER_CONFIG_PATH"}) {
    ASSERT_TRUE(env.contains(variable)) << variable;
    const fs::path path = env[variable];
    EXPECT_EQ(path.parent_path(), kPaths.host_config_dir(1)) << variable;
    EXPECT_TRUE(files.contains(path.filename().string())) << variable;
  }
  EXPECT_EQ(env["SMDEBUG_CONFIG_FILE_PATH"], (kPaths.host_config_dir(1) / "debughookconfig.json").string());
  EXPECT_FALSE(env.contains("CHECKPOINT_CONFIG_FILE_PATH"));

  // The first host differs where it must.
  auto first = host_environment(request, kPaths, 0, 29500, arn);
  EXPECT_EQ(first["SM_CURRENT_HOST"], "algo-1");
  EXPECT_EQ(first["RANK"], "0");
  EXPECT_EQ(first["SM_MODEL_DIR"], (kPaths.host_root(0) / "model").string());
  EXPECT_EQ(json::parse(first["SM_TRAINING_ENV"])["is_master"], true);
}

// The most SageMaker accepts: 100 hyperparameters, 256-character names and 2500-character values,
// each character one that JSON escapes to six bytes. SM_HPS alone would pass the kernel's 128 KiB
// bound on one variable and the whole environment its ARG_MAX: every host failed with "Argument
// list too long". Past the bounds of docs/reliability.md variables are left out, and said to be.
TEST(ContainerEnvironment, TheLargestHyperparametersSageMakerAllowsStartAHost) {
  auto repeated = [](std::string_view text, int times) {
    std::string out;
    for (int i = 0; i < times; ++i) out += text;
    return out;
  };
  const std::string e_acute = "\u00e9";  // one UTF-16 unit, "\u00e9" in JSON
  const std::string name_tail = repeated(e_acute, 250);
  json r = base_request();
  r["HyperParameters"] = json::object();
  for (int i = 0; i < 100; ++i) r["HyperParameters"][fmt::format("hp{:03}-", i) + name_tail] = repeated(e_acute, 2500);
  const TrainingJobRequest request = parse(r);
  ASSERT_EQ(request.hyperparameters.size(), 100u);
  const auto env = host_environment(request, kPaths, 0, 29500, "arn");

  std::vector<std::string> process_env = os::current_environment();
  for (const auto& [key, v] : env) os::set_env(process_env, key, v);
  auto pid = os::spawn({.argv = {"/bin/sh", "-c", "exit 0"}, .env = process_env});
  ASSERT_TRUE(pid) << pid.error().message;
  const auto status = os::wait_exit(*pid);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->code(), 0);

  // What was left out is named, for the job's log and the training script.
  ASSERT_TRUE(env.contains("VIGIL_LEFT_OUT_VARIABLES"));
  const std::string& left_out = env.at("VIGIL_LEFT_OUT_VARIABLES");
  EXPECT_NE(left_out.find("SM_HPS"), std::string::npos) << left_out.substr(0, 200);
  EXPECT_FALSE(env.contains("SM_HPS"));
  EXPECT_EQ(json::parse(env.at("SM_TRAINING_ENV"))["hyperparameters"], json::object());
  // SM_HP_<NAME> variables are kept in name order up to their budget, the rest left out by name.
  EXPECT_TRUE(env.contains("SM_HP_HP000-" + name_tail));
  EXPECT_FALSE(env.contains("SM_HP_HP099-" + name_tail));
  EXPECT_NE(left_out.find("SM_HP_HP099-"), std::string::npos);
  for (const auto& [key, v] : env) EXPECT_LT(key.size() + v.size() + 2, size_t(128 * 1024)) << key.substr(0, 20);
}

// An ordinary request leaves nothing out.
TEST(ContainerEnvironment, OrdinaryHyperparametersLeaveNothingOut) {
  const auto env = host_environment(parse(two_host_request()), kPaths, 0, 29500, "arn");
  EXPECT_FALSE(env.contains("VIGIL_LEFT_OUT_VARIABLES"));
  EXPECT_TRUE(env.contains("SM_HPS"));
}

// Python's float repr and str(), as the toolkit writes them.
TEST(ContainerEnvironment, HyperparameterValuesArePythonsSpelling) {
  json r = base_request();
  r["HyperParameters"] = {{"big", "1e15"}, {"tiny", "0.00001"}, {"huge", "123456789012345678901234567890"},
                          {"nothing", "null"}, {"word", "yes"}, {"quoted", R"("128")"}, {"e", "\u00e9"}};
  auto env = host_environment(parse(r), kPaths, 0, 29500, "arn");
  EXPECT_EQ(env["SM_HPS"],
            R"({"big":1000000000000000.0,"e":"\u00e9","huge":"123456789012345678901234567890","nothing":null,)"
            R"("quoted":"128","tiny":1e-05,"word":"yes"})");
  EXPECT_EQ(env["SM_USER_ARGS"],
            R"(["--big","1000000000000000.0","-e","\u00e9","--huge","123456789012345678901234567890","--nothing","",)"
            R"("--quoted","128","--tiny","1e-05","--word","yes"])");
  EXPECT_EQ(env["SM_HP_NOTHING"], "");
  EXPECT_EQ(env["SM_HP_QUOTED"], "128");
  EXPECT_EQ(env["SM_HP_E"], "\u00e9");
  EXPECT_EQ(env["SM_HPS"].find("sagemaker"), std::string::npos);
  // A name no variable can carry is only in SM_HPS and SM_USER_ARGS.
  r["HyperParameters"] = {{"a=b", "1"}};
  env = host_environment(parse(r), kPaths, 0, 29500, "arn");
  EXPECT_EQ(env["SM_HPS"], R"({"a=b":1})");
  EXPECT_EQ(env["SM_USER_ARGS"], R"(["--a=b","1"])");
  EXPECT_TRUE(std::none_of(env.begin(), env.end(), [](const auto& e) { return e.first.starts_with("SM_HP_"); }));
  EXPECT_EQ(env["SM_CHANNELS"], "[]");
  EXPECT_EQ(env["SM_INPUT_DATA_CONFIG"], "{}");
  EXPECT_FALSE(env.contains("SM_USER_ENTRY_POINT"));
  for (const char* variable : {"SMDEBUG_CONFIG_FILE_PATH", "TENSORBOARD_CONFIG_FILE_PATH", "SMPROFILER_CONFIG_PATH", "CHECKPOINT_CONFIG_FILE_PATH"})
    EXPECT_FALSE(env.contains(variable)) << variable;
  EXPECT_EQ(env["WORLD_SIZE"], "1");
}

TEST(ContainerConfigFiles, FilesOfTheTwoHostJob) {
  const TrainingJobRequest request = parse(two_host_request());
  const auto files = container_config_files(request, kPaths, 1);
  std::vector<std::string> names;
  for (const auto& [name, text] : files) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"debughookconfig.json", "hyperparameters.json", "inputdataconfig.json",
                                              "profilerconfig.json", "resourceconfig.json", "tensorboardoutputconfig.json"}));

  const json hyperparameters = json::parse(files.at("hyperparameters.json"));
  EXPECT_EQ(hyperparameters, request.document["HyperParameters"]);  // every value a string, as sent
  const json resources = json::parse(files.at("resourceconfig.json"));
  EXPECT_EQ(resources["current_host"], "algo-2");
  EXPECT_EQ(resources["hosts"], json::array({"algo-1", "algo-2"}));
  EXPECT_EQ(resources["instance_groups"][0]["hosts"], resources["hosts"]);
  const json inputs = json::parse(files.at("inputdataconfig.json"));
  EXPECT_EQ(inputs["train"]["TrainingInputMode"], "File");
  EXPECT_EQ(inputs["test"]["S3DistributionType"], "ShardedByS3Key");

  const json hook = json::parse(files.at("debughookconfig.json"));
  EXPECT_EQ(hook["LocalPath"], kPaths.debug_output().string());  // not the request's /opt/ml/output/tensors
  EXPECT_EQ(hook["HookParameters"], request.document["DebugHookConfig"]["HookParameters"]);
  EXPECT_EQ(hook["CollectionConfigurations"], request.document["DebugHookConfig"]["CollectionConfigurations"]);
  EXPECT_EQ(json::parse(files.at("tensorboardoutputconfig.json")),
            json({{"LocalPath", kPaths.tensorboard_output().string()}}));

  const json profiler_file = json::parse(files.at("profilerconfig.json"));
  EXPECT_EQ(profiler_file["ProfilingParameters"]["LocalPath"], kPaths.profiler_output().string());
  EXPECT_EQ(profiler_file["ProfilingIntervalInMilliseconds"], 500);
  // Vigil's profiler reads the file as the hosts will.
  auto config = profiler::parse_profiler_config(files.at("profilerconfig.json"));
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->local_path, kPaths.profiler_output());
  EXPECT_EQ(config->interval_ms, 500);
  EXPECT_TRUE(config->system_monitor_enabled());
  EXPECT_TRUE(config->dataloader.enabled);
  EXPECT_EQ(config->dataloader.start_step, 7);
}

TEST(ContainerConfigFiles, ProfilerFileWithoutParametersAndDisabled) {
  json r = base_request();
  r["ProfilerConfig"] = {{"S3OutputPath", "s3://bucket/out/"}};
  auto files = container_config_files(parse(r), kPaths, 0);
  auto config = profiler::parse_profiler_config(files.at("profilerconfig.json"));
  ASSERT_VIGIL_OK(config);
  EXPECT_EQ(config->local_path, kPaths.profiler_output());
  EXPECT_TRUE(config->system_monitor_enabled());
  EXPECT_FALSE(config->dataloader.enabled);

  r["ProfilerConfig"]["DisableProfiler"] = true;
  const TrainingJobRequest disabled = parse(r);
  EXPECT_FALSE(disabled.profiler);
  files = container_config_files(disabled, kPaths, 0);
  config = profiler::parse_profiler_config(files.at("profilerconfig.json"));
  ASSERT_VIGIL_OK(config);
  EXPECT_TRUE(config->disable_profiler);
  EXPECT_FALSE(config->system_monitor_enabled());
  EXPECT_TRUE(host_environment(disabled, kPaths, 0, 1, "arn").contains("SMPROFILER_CONFIG_PATH"));
}

TEST(ContainerConfigFiles, CheckpointFile) {
  json r = base_request();
  r["CheckpointConfig"] = {{"S3Uri", "s3://bucket/ckpt"}};
  TrainingJobRequest request = parse(r);
  auto files = container_config_files(request, kPaths, 0);
  EXPECT_EQ(json::parse(files.at("checkpointconfig.json")),
            json({{"LocalPath", (kPaths.host_root(0) / "checkpoints").string()}, {"S3Uri", "s3://bucket/ckpt"}}));
  auto env = host_environment(request, kPaths, 0, 29500, "arn");
  EXPECT_EQ(env["CHECKPOINT_CONFIG_FILE_PATH"], (kPaths.host_config_dir(0) / "checkpointconfig.json").string());

  r["CheckpointConfig"]["LocalPath"] = "/opt/ml/my-ckpt/";
  files = container_config_files(parse(r), kPaths, 0);
  EXPECT_EQ(json::parse(files.at("checkpointconfig.json"))["LocalPath"], (kPaths.host_root(0) / "my-ckpt").string());
  r["CheckpointConfig"]["LocalPath"] = "/scratch/ckpt";
  files = container_config_files(parse(r), kPaths, 0);
  EXPECT_EQ(json::parse(files.at("checkpointconfig.json"))["LocalPath"], "/scratch/ckpt");
  EXPECT_FALSE(files.contains("debughookconfig.json"));
}

// The spec's example request gives files the hosts' readers accept.
TEST(ContainerConfigFiles, TheSpecExample) {
  const std::string spec = test::read_file(test::shared_dir() / "spec" / "sagemaker-api.md");
  const size_t start = spec.find("```json\n", spec.find("## 10. Example CreateTrainingJob request")) + 8;
  auto request = parse_training_job_request(spec.substr(start, spec.find("```", start) - start));
  ASSERT_VIGIL_OK(request);
  const auto files = container_config_files(*request, kPaths, 0);
  for (const auto& [name, text] : files) EXPECT_FALSE(json::parse(text, nullptr, false).is_discarded()) << name;
  auto config = profiler::parse_profiler_config(files.at("profilerconfig.json"));
  ASSERT_VIGIL_OK(config);
  EXPECT_TRUE(config->python.enabled);
  EXPECT_EQ(config->python.num_steps, 3);
  EXPECT_EQ(json::parse(files.at("debughookconfig.json"))["CollectionConfigurations"].size(), 3u);
  const auto env = host_environment(*request, kPaths, 0, 29500, "arn");
  EXPECT_EQ(env.at("SM_HPS"), "{}");
  EXPECT_EQ(env.at("SM_CURRENT_INSTANCE_TYPE"), "ml.g5.xlarge");
}

}  // namespace
}  // namespace vigil::jobs
