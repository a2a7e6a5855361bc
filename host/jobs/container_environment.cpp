#include "jobs/container_environment.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>
#include <vector>

#include "format/json_limits.h"
#include "format/python_json.h"
#include "format/sagemaker_container.h"
#include <vigil/sdk/text.hpp>

namespace vigil::jobs {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
namespace sagemaker = format::sagemaker;

constexpr std::string_view kInstanceGroup = "homogeneousCluster";  // the toolkit's name for the one group
constexpr std::string_view kNetworkInterface = "lo";               // every host is this machine
constexpr int kDefaultLogLevel = 20;  // Python's logging.INFO, the toolkit's default

// The kernel refuses an exec whose one "NAME=VALUE" string passes MAX_ARG_STRLEN (32 pages: 128 KiB
// with its NUL), or whose argument and environment strings together pass ARG_MAX (2 MiB with the
// usual 8 MiB stack). SageMaker's largest hyperparameters (100 names of 256 characters, values of
// 2500, JSON-escaped to six bytes each) make SM_HPS about 1.6 MB, and SM_USER_ARGS, SM_TRAINING_ENV
// and the SM_HP_<NAME> variables as much again: every host failed with "Argument list too long".
constexpr size_t kMaxEnvironmentStringBytes = 128 * 1024;
// All SM_HP_<NAME> strings together, so that the hyperparameters' variables (at most 128 KiB each
// for SM_HPS, SM_USER_ARGS, SM_FRAMEWORK_PARAMS, SM_TRAINING_ENV) stay under 1 MiB in all.
constexpr size_t kMaxPerNameHyperparameterBytes = 256 * 1024;

// Hyperparameters the toolkit takes for itself (besides every other sagemaker_* name).
constexpr std::string_view kSageMakerHyperparameters[] = {
    "sagemaker_program",   "sagemaker_submit_directory",    "sagemaker_enable_cloudwatch_metrics",
    "sagemaker_region",    "sagemaker_container_log_level", "sagemaker_job_name",
    "default_user_module_name", "_tuning_objective_metric", "sagemaker_s3_output"};

bool is_known_sagemaker_hyperparameter(std::string_view name) {
  return std::find(std::begin(kSageMakerHyperparameters), std::end(kSageMakerHyperparameters), name) !=
         std::end(kSageMakerHyperparameters);
}

ojson to_ordered(const json& v) {
  if (v.is_object()) {
    ojson out = ojson::object();
    for (const auto& [k, e] : v.items()) out[k] = to_ordered(e);
    return out;
  }
  if (v.is_array()) {
    ojson out = ojson::array();
    for (const auto& e : v) out.push_back(to_ordered(e));
    return out;
  }
  return ojson::parse(v.dump(-1, ' ', false, json::error_handler_t::replace));  // a scalar
}

// json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True), the toolkit's
// encoding of every non-string value it puts into a variable. Scalars are written by
// format::python_json_dumps (Python's float repr and string escapes); only the separators and the
// key order differ from its default.
void dump_compact_sorted(std::string& out, const ojson& v) {
  if (v.is_object()) {
    std::vector<std::pair<std::string_view, const ojson*>> items;
    for (const auto& [k, e] : v.items()) items.emplace_back(k, &e);
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out += '{';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += ',';
      out += format::python_json_dumps(ojson(std::string(items[i].first)));
      out += ':';
      dump_compact_sorted(out, *items[i].second);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ',';
      dump_compact_sorted(out, v[i]);
    }
    out += ']';
  } else {
    out += format::python_json_dumps(v);
  }
}

std::string compact_sorted(const ojson& v) {
  std::string out;
  dump_compact_sorted(out, v);
  return out;
}

// Python's repr() of a str: single quotes unless the text holds ' and no ".
std::string python_string_repr(std::string_view s) {
  const char quote = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == quote) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;  // non-ASCII text is printable for Python's repr (taken so here)
    }
  }
  out += quote;
  return out;
}

std::string python_repr(const ojson& v);

// Python's str() of a value json.loads gave.
std::string python_str(const ojson& v) {
  return v.is_string() ? v.get<std::string>() : python_repr(v);
}

std::string python_repr(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null: return "None";
    case ojson::value_t::boolean: return v.get<bool>() ? "True" : "False";
    case ojson::value_t::string: return python_string_repr(v.get_ref<const std::string&>());
    case ojson::value_t::array: {
      std::vector<std::string> items;
      for (const auto& e : v) items.push_back(python_repr(e));
      return fmt::format("[{}]", fmt::join(items, ", "));
    }
    case ojson::value_t::object: {
      std::vector<std::string> items;
      for (const auto& [k, e] : v.items()) items.push_back(fmt::format("{}: {}", python_string_repr(k), python_repr(e)));
      return fmt::format("{{{}}}", fmt::join(items, ", "));
    }
    default: return format::python_json_dumps(v);  // numbers: int, and float's repr
  }
}

// The toolkit's format_value: strings as they are, None as "", anything else as compact JSON.
std::string variable_value(const ojson& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return compact_sorted(v);
}

// json.loads(text) where it parses, else the text (the toolkit's read_hyperparameters).
ojson decode_hyperparameter(const std::string& text) {
  if (format::json_nesting_exceeds(text)) return text;
  ojson v = ojson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return text;
  // An integer literal beyond 64 bits reads back as a double here but stays exact in Python: keep the text.
  if (v.is_number_float() && text.find_first_of(".eE") == std::string::npos) return text;
  return v;
}

size_t code_points(std::string_view s) {
  return size_t(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// The toolkit's split of the hyperparameters.
struct Hyperparameters {
  ojson user = ojson::object();       // SM_HPS: everything not the toolkit's
  ojson framework = ojson::object();  // SM_FRAMEWORK_PARAMS: sagemaker_* names it does not know
  ojson sagemaker = ojson::object();  // every sagemaker_* name and the other names it knows
};

Hyperparameters split_hyperparameters(const TrainingJobRequest& request) {
  Hyperparameters hps;
  for (const auto& [name, text] : request.hyperparameters) {
    ojson value = decode_hyperparameter(text);
    if (is_known_sagemaker_hyperparameter(name) || name.starts_with("sagemaker_")) {
      if (!is_known_sagemaker_hyperparameter(name)) hps.framework[name] = value;
      hps.sagemaker[name] = std::move(value);
    } else {
      hps.user[name] = std::move(value);
    }
  }
  return hps;
}

// The toolkit's to_cmd_args: "--name value" per hyperparameter in name order.
ojson user_args(const ojson& user) {
  std::vector<std::string> names;
  for (const auto& [k, v] : user.items()) names.push_back(k);
  std::sort(names.begin(), names.end());
  ojson args = ojson::array();
  for (const auto& name : names) {
    args.push_back(name.empty() ? "" : code_points(name) > 1 ? "--" + name : "-" + name);
    const ojson& value = user.at(name);
    if (value.is_object()) {
      std::vector<std::pair<std::string, std::string>> items;
      for (const auto& [k, v] : value.items()) items.emplace_back(k, fmt::format("{}={}", k, python_str(v)));
      std::sort(items.begin(), items.end());
      std::vector<std::string> parts;
      for (auto& [k, text] : items) parts.push_back(std::move(text));
      args.push_back(fmt::format("{}", fmt::join(parts, ",")));
    } else {
      args.push_back(value.is_null() ? std::string() : python_str(value));
    }
  }
  return args;
}

ojson host_names(const TrainingJobRequest& request) {
  ojson hosts = ojson::array();
  for (int i = 0; i < request.instance_count; ++i) hosts.push_back(host_name(i));
  return hosts;
}

std::string instance_type(const TrainingJobRequest& request) {
  const auto rc = request.document.find("ResourceConfig");
  if (rc != request.document.end() && rc->is_object())
    if (auto t = rc->find("InstanceType"); t != rc->end() && t->is_string()) return t->get<std::string>();
  return "local";
}

ojson resource_config(const TrainingJobRequest& request, int host_index) {
  const ojson hosts = host_names(request);
  const std::string type = instance_type(request);
  ojson group = ojson::object();
  group["instance_group_name"] = kInstanceGroup;
  group["instance_type"] = type;
  group["hosts"] = hosts;
  ojson config = ojson::object();
  config["current_host"] = host_name(host_index);
  config["current_instance_type"] = type;
  config["current_group_name"] = kInstanceGroup;
  config["hosts"] = hosts;
  config["instance_groups"] = ojson::array({group});
  config["network_interface_name"] = kNetworkInterface;
  return config;
}

// The request's InputDataConfig as inputdataconfig.json describes each channel.
ojson input_data_config(const TrainingJobRequest& request) {
  const json& doc = request.document;
  std::string default_mode = "File";
  if (auto spec = doc.find("AlgorithmSpecification"); spec != doc.end() && spec->is_object())
    if (auto mode = spec->find("TrainingInputMode"); mode != spec->end() && mode->is_string()) default_mode = mode->get<std::string>();
  auto text = [](const json& object, std::string_view key, std::string fallback) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
  };
  ojson config = ojson::object();
  auto channels = doc.find("InputDataConfig");
  if (channels == doc.end() || !channels->is_array()) return config;
  for (const auto& channel : *channels) {
    if (!channel.is_object() || !channel.contains("ChannelName") || !channel["ChannelName"].is_string()) continue;
    std::string distribution = "FullyReplicated";
    if (auto source = channel.find("DataSource"); source != channel.end() && source->is_object())
      if (auto s3 = source->find("S3DataSource"); s3 != source->end() && s3->is_object())
        distribution = text(*s3, "S3DataDistributionType", distribution);
    ojson entry = ojson::object();
    if (auto content = channel.find("ContentType"); content != channel.end() && content->is_string())
      entry["ContentType"] = content->get<std::string>();
    entry["TrainingInputMode"] = text(channel, "InputMode", default_mode);
    entry["S3DistributionType"] = distribution;
    entry["RecordWrapperType"] = text(channel, "RecordWrapperType", "None");
    config[channel["ChannelName"].get<std::string>()] = std::move(entry);
  }
  return config;
}

const json* request_member(const TrainingJobRequest& request, std::string_view name) {
  auto it = request.document.find(name);
  return it != request.document.end() && it->is_object() ? &*it : nullptr;
}

// The optional config files this job's hosts get (the one list both functions below follow).
struct OptionalFiles {
  bool debug_hook, tensorboard, profiler, checkpoint;
};
OptionalFiles optional_files(const TrainingJobRequest& request) {
  return {request_member(request, "DebugHookConfig") != nullptr,
          request_member(request, "TensorBoardOutputConfig") != nullptr,
          request_member(request, "ProfilerConfig") != nullptr,
          request_member(request, "CheckpointConfig") != nullptr};
}

std::string file_text(const ojson& v) { return v.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n"; }

}  // namespace

std::map<std::string, std::string> host_environment(const TrainingJobRequest& request, const JobPaths& paths,
                                                    int host_index, int master_port, std::string_view job_arn) {
  auto container = [&](std::string_view path) { return map_container_path(paths, host_index, path).string(); };
  const Hyperparameters hps = split_hyperparameters(request);
  const ojson hosts = host_names(request);
  const ojson resources = resource_config(request, host_index);
  const ojson inputs = input_data_config(request);
  const std::string type = instance_type(request);

  ojson channel_dirs = ojson::object();
  ojson channels = ojson::array();
  for (const auto& [name, config] : inputs.items()) {
    channel_dirs[name] = container(std::string(sagemaker::kInputDataDir) + "/" + name);
    channels.push_back(name);
  }
  std::sort(channels.begin(), channels.end());

  auto sagemaker_hp = [&](const char* name) -> const ojson* {
    auto it = hps.sagemaker.find(name);
    return it != hps.sagemaker.end() ? &*it : nullptr;
  };
  const ojson log_level = sagemaker_hp("sagemaker_container_log_level") ? *sagemaker_hp("sagemaker_container_log_level")
                                                                        : ojson(kDefaultLogLevel);
  const ojson module_dir = sagemaker_hp("sagemaker_submit_directory")
                               ? ojson(python_str(*sagemaker_hp("sagemaker_submit_directory")))
                               : ojson(container(sagemaker::kCodeDir));
  ojson entry_point = nullptr, module_name = nullptr;
  if (const ojson* program = sagemaker_hp("sagemaker_program")) {
    entry_point = *program;
    std::string name = python_str(*program);
    if (name.ends_with(".py")) name.resize(name.size() - 3);
    module_name = name;
  }
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());

  ojson training_env = ojson::object();
  training_env["additional_framework_parameters"] = hps.framework;
  training_env["channel_input_dirs"] = channel_dirs;
  training_env["current_host"] = host_name(host_index);
  training_env["current_instance_group"] = kInstanceGroup;
  training_env["current_instance_group_hosts"] = hosts;
  training_env["current_instance_type"] = type;
  training_env["framework_module"] = nullptr;
  training_env["hosts"] = hosts;
  training_env["hyperparameters"] = hps.user;
  training_env["input_config_dir"] = container(sagemaker::kInputConfigDir);
  training_env["input_data_config"] = inputs;
  training_env["input_dir"] = container(sagemaker::kInputDir);
  training_env["instance_groups"] = ojson::array({kInstanceGroup});
  training_env["is_hetero"] = false;
  training_env["is_master"] = host_index == 0;
  training_env["job_name"] = request.name;
  training_env["log_level"] = log_level;
  training_env["master_hostname"] = host_name(0);
  training_env["model_dir"] = container(sagemaker::kModelDir);
  training_env["module_dir"] = module_dir;
  training_env["module_name"] = module_name;
  training_env["network_interface_name"] = kNetworkInterface;
  training_env["num_cpus"] = cpus;
  training_env["num_gpus"] = 0;
  training_env["output_data_dir"] = container(sagemaker::kOutputDataDir);
  training_env["output_dir"] = container(sagemaker::kOutputDir);
  training_env["output_intermediate_dir"] = container(sagemaker::kOutputIntermediateDir);
  training_env["resource_config"] = resources;
  training_env["user_entry_point"] = entry_point;

  // The request's Environment first: the job's own variables below replace an entry of the same name.
  std::map<std::string, std::string> env(request.environment.begin(), request.environment.end());
  auto set = [&](std::string name, std::string value) { env[std::move(name)] = std::move(value); };
  set("SM_CURRENT_HOST", host_name(host_index));
  set("SM_HOSTS", compact_sorted(hosts));
  set("SM_NETWORK_INTERFACE_NAME", std::string(kNetworkInterface));
  set("SM_RESOURCE_CONFIG", compact_sorted(resources));
  set("SM_CURRENT_INSTANCE_TYPE", type);
  set("SM_CURRENT_INSTANCE_GROUP", std::string(kInstanceGroup));
  set("SM_CURRENT_INSTANCE_GROUP_HOSTS", compact_sorted(hosts));
  set("SM_INSTANCE_GROUPS", compact_sorted(training_env["instance_groups"]));
  set("SM_IS_HETERO", "false");
  // The hyperparameters' variables within the kernel's bounds (docs/reliability.md); the rest are
  // left out and named in kLeftOutVariable (hyperparameters.json always holds them all).
  std::vector<std::string> left_out;
  auto set_bounded = [&](std::string name, std::string value) {
    if (name.size() + 1 + value.size() + 1 > kMaxEnvironmentStringBytes) {
      env.erase(name);  // nor an Environment entry of that name: the job's variables are its own
      left_out.push_back(std::move(name));
      return;
    }
    set(std::move(name), std::move(value));
  };
  set_bounded("SM_HPS", compact_sorted(hps.user));
  size_t per_name_bytes = 0;
  for (const auto& [name, value] : hps.user.items()) {
    if (name.find('=') != std::string::npos) continue;  // no variable can have such a name (the toolkit fails on it)
    std::string variable = "SM_HP_" + sdk::upper(name), text = variable_value(value);
    per_name_bytes += variable.size() + 1 + text.size() + 1;
    if (per_name_bytes > kMaxPerNameHyperparameterBytes) {
      env.erase(variable);
      left_out.push_back(std::move(variable));
      continue;
    }
    set(std::move(variable), std::move(text));
  }
  set_bounded("SM_USER_ARGS", compact_sorted(user_args(hps.user)));
  set("SM_CHANNELS", compact_sorted(channels));
  for (const auto& [name, dir] : channel_dirs.items()) set("SM_CHANNEL_" + sdk::upper(name), dir.get<std::string>());
  set("SM_INPUT_DATA_CONFIG", compact_sorted(inputs));
  set("SM_MODEL_DIR", training_env["model_dir"].get<std::string>());
  set("SM_OUTPUT_DIR", training_env["output_dir"].get<std::string>());
  set("SM_OUTPUT_DATA_DIR", training_env["output_data_dir"].get<std::string>());
  set("SM_OUTPUT_INTERMEDIATE_DIR", training_env["output_intermediate_dir"].get<std::string>());
  set("SM_INPUT_DIR", training_env["input_dir"].get<std::string>());
  set(std::string(sagemaker::kInputConfigDirVariable), training_env["input_config_dir"].get<std::string>());
  set("SM_MODULE_DIR", variable_value(module_dir));
  set("SM_NUM_CPUS", std::to_string(cpus));
  set("SM_NUM_GPUS", "0");
  set("SM_LOG_LEVEL", variable_value(log_level));
  set_bounded("SM_FRAMEWORK_PARAMS", compact_sorted(hps.framework));
  if (!entry_point.is_null()) {
    set("SM_USER_ENTRY_POINT", variable_value(entry_point));
    set("SM_MODULE_NAME", variable_value(module_name));
  }
  if (std::string text = compact_sorted(training_env); text.size() + sizeof("SM_TRAINING_ENV=") <= kMaxEnvironmentStringBytes) {
    set("SM_TRAINING_ENV", std::move(text));
  } else {  // the toolkit's other members still matter: only the hyperparameters go
    training_env["hyperparameters"] = ojson::object();
    training_env["additional_framework_parameters"] = ojson::object();
    left_out.push_back("SM_TRAINING_ENV.hyperparameters");
    set_bounded("SM_TRAINING_ENV", compact_sorted(training_env));
  }
  set(std::string(sagemaker::kTrainingJobNameVariable), request.name);
  set("TRAINING_JOB_ARN", std::string(job_arn));

  const OptionalFiles files = optional_files(request);
  const fs::path config_dir = paths.host_config_dir(host_index);
  auto point_at = [&](std::string_view variable, std::string_view file) {
    set(std::string(variable), (config_dir / file).string());
  };
  if (files.debug_hook) point_at(sagemaker::kDebugHookConfigVariable, sagemaker::kDebugHookConfigFile);
  if (files.tensorboard) point_at(sagemaker::kTensorBoardConfigVariable, sagemaker::kTensorBoardConfigFile);
  if (files.profiler) point_at(sagemaker::kProfilerConfigVariable, sagemaker::kProfilerConfigFile);
  if (files.checkpoint) point_at(sagemaker::kCheckpointConfigVariable, sagemaker::kCheckpointConfigFile);

  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", std::to_string(master_port));
  set("RANK", std::to_string(host_index));
  set("WORLD_SIZE", std::to_string(request.instance_count));
  set("LOCAL_RANK", "0");
  if (!left_out.empty()) set(std::string(kLeftOutVariable), fmt::format("{}", fmt::join(left_out, ",")));
  return env;
}

std::map<std::string, std::string> container_config_files(const TrainingJobRequest& request, const JobPaths& paths,
                                                          int host_index) {
  std::map<std::string, std::string> files;
  ojson hyperparameters = ojson::object();
  for (const auto& [name, value] : request.hyperparameters) hyperparameters[name] = value;
  files[std::string(sagemaker::kHyperparametersFile)] = file_text(hyperparameters);
  files[std::string(sagemaker::kResourceConfigFile)] = file_text(resource_config(request, host_index));
  files[std::string(sagemaker::kInputDataConfigFile)] = file_text(input_data_config(request));

  const OptionalFiles present = optional_files(request);
  if (present.debug_hook) {
    const json& hook = *request_member(request, "DebugHookConfig");
    ojson config = ojson::object();
    config["LocalPath"] = paths.debug_output().string();
    for (const char* key : {"HookParameters", "CollectionConfigurations"})
      if (auto it = hook.find(key); it != hook.end() && !it->is_null()) config[key] = to_ordered(*it);
    files[std::string(sagemaker::kDebugHookConfigFile)] = file_text(config);
  }
  if (present.tensorboard) {
    ojson config = ojson::object();
    config["LocalPath"] = paths.tensorboard_output().string();
    files[std::string(sagemaker::kTensorBoardConfigFile)] = file_text(config);
  }
  if (present.profiler) {
    ojson config = to_ordered(*request_member(request, "ProfilerConfig"));
    if (!config.contains("ProfilingParameters") || !config["ProfilingParameters"].is_object())
      config["ProfilingParameters"] = ojson::object();
    config["ProfilingParameters"]["LocalPath"] = paths.profiler_output().string();
    files[std::string(sagemaker::kProfilerConfigFile)] = file_text(config);
  }
  if (present.checkpoint) {
    const json& checkpoint = *request_member(request, "CheckpointConfig");
    std::string local = std::string(sagemaker::kCheckpointDir);
    // An empty LocalPath counts as none (as evaluate::check_debugger_supported reads it).
    if (auto it = checkpoint.find("LocalPath"); it != checkpoint.end() && it->is_string() && !it->get_ref<const std::string&>().empty())
      local = it->get<std::string>();
    ojson config = ojson::object();
    config["LocalPath"] = map_container_path(paths, host_index, local).string();
    if (auto it = checkpoint.find("S3Uri"); it != checkpoint.end() && it->is_string()) config["S3Uri"] = it->get<std::string>();
    files[std::string(sagemaker::kCheckpointConfigFile)] = file_text(config);
  }
  return files;
}

}  // namespace vigil::jobs
