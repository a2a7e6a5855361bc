// What each host of a training job run locally finds, as a SageMaker training container finds it
// (sagemaker-api §3.1, §3.1a): its environment variables and its input/config files. Pure: the
// supervisor writes the files and starts the command; nothing here touches the file system.
//
// Every path handed to the command is a host path: the container's /opt/ml/... mapped into the
// host's folder (map_container_path), so SM_MODEL_DIR is <host_root>/model. The debug hook,
// TensorBoard and profiler outputs of every host point at the job's shared output folders
// (JobPaths::debug_output() ...), as every SageMaker host uploads to the same S3 prefix.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "jobs/job_paths.h"
#include "jobs/training_job_request.h"

namespace vigil::jobs {

// The variables of host `host_index` (0-based) that the job sets; the supervisor lays them over
// its own environment (PATH, HOME, ... come from there).
// * The SageMaker training toolkit's variables, spelt as it spells them: SM_CURRENT_HOST, SM_HOSTS,
//   SM_NETWORK_INTERFACE_NAME ("lo": every host is this machine), SM_RESOURCE_CONFIG,
//   SM_CURRENT_INSTANCE_TYPE, SM_HPS, SM_HP_<NAME> (the name upper-cased and otherwise kept:
//   "batch-size" -> SM_HP_BATCH-SIZE), SM_USER_ARGS, SM_CHANNELS, SM_CHANNEL_<NAME>,
//   SM_INPUT_DATA_CONFIG, SM_MODEL_DIR, SM_OUTPUT_DIR, SM_OUTPUT_DATA_DIR, SM_OUTPUT_INTERMEDIATE_DIR,
//   SM_INPUT_DIR, SM_INPUT_CONFIG_DIR, SM_MODULE_DIR, SM_NUM_CPUS (this machine's), SM_NUM_GPUS
//   (0), SM_LOG_LEVEL, SM_FRAMEWORK_PARAMS, SM_TRAINING_ENV, and SM_USER_ENTRY_POINT /
//   SM_MODULE_NAME where the sagemaker_program hyperparameter names the entry point.
//   As in the toolkit, each hyperparameter value is decoded as JSON where it parses ("128" -> 128,
//   "true" -> true, "0.1" -> 0.1, "[1, 2]" -> a list; anything else stays a string), hyperparameters
//   named sagemaker_* are left out of SM_HPS, SM_HP_* and SM_USER_ARGS (SM_FRAMEWORK_PARAMS gets
//   the unknown ones), JSON values are written compact with sorted keys and non-ASCII escaped, and
//   SM_USER_ARGS holds "--name" (one letter: "-n") and Python's str() of each value in name order
//   ("True", "[1, 'a']"). Differences: integers beyond 64 bits, NaN and Infinity stay strings.
// * Within the kernel's bounds on an exec (docs/reliability.md, "Bounds"): a hyperparameter variable
//   whose NAME=VALUE passes 128 KiB is left out (SM_TRAINING_ENV keeps its other members, with
//   "hyperparameters" and "additional_framework_parameters" emptied), SM_HP_<NAME> variables are set
//   in name order while they total at most 256 KiB, and kLeftOutVariable names, comma-separated,
//   every variable left out (absent when none was).
// * TRAINING_JOB_NAME (how smdebug and Vigil's hooks know they run in SageMaker), TRAINING_JOB_ARN.
// * SMDEBUG_CONFIG_FILE_PATH, TENSORBOARD_CONFIG_FILE_PATH, SMPROFILER_CONFIG_PATH,
//   CHECKPOINT_CONFIG_FILE_PATH: host_config_dir()/<file>, only for the files container_config_files
//   gives for this job.
// * torch.distributed's MASTER_ADDR=127.0.0.1, MASTER_PORT=<master_port>, RANK=<host_index>,
//   WORLD_SIZE=<instance_count>, LOCAL_RANK=0.
// * The request's Environment. It may add variables (USE_SMDEBUG=0, SMDEBUG_LOG_LEVEL, ...) but not
//   replace any of the above: each of those describes the job as run here, and an Environment entry
//   of the same name is dropped (the job's own value wins).
inline constexpr std::string_view kLeftOutVariable = "VIGIL_LEFT_OUT_VARIABLES";
std::map<std::string, std::string> host_environment(const TrainingJobRequest& request, const JobPaths& paths,
                                                    int host_index, int master_port, std::string_view job_arn);

// The files host `host_index` finds under host_config_dir(), name -> JSON text:
// * always hyperparameters.json (HyperParameters as sent: every value a string), resourceconfig.json
//   ({"current_host", "current_instance_type" (ResourceConfig.InstanceType, else "local"),
//   "current_group_name": "homogeneousCluster", "hosts", "instance_groups", "network_interface_name": "lo"})
//   and inputdataconfig.json (per channel of InputDataConfig: ContentType where given,
//   TrainingInputMode (the channel's InputMode, else AlgorithmSpecification's, else File),
//   S3DistributionType (else FullyReplicated), RecordWrapperType (else None); {} without channels);
// * with DebugHookConfig, debughookconfig.json: {"LocalPath": paths.debug_output(), HookParameters
//   and CollectionConfigurations as sent};
// * with TensorBoardOutputConfig, tensorboardoutputconfig.json: {"LocalPath": paths.tensorboard_output()};
// * with ProfilerConfig (also when DisableProfiler is true: the file then says so),
//   profilerconfig.json: the ProfilerConfig as sent with ProfilingParameters.LocalPath =
//   paths.profiler_output() (ProfilingParameters created where it was not sent, as SageMaker's file
//   always carries the local path; with Vigil's profiler that also means framework events are
//   recorded, as smdebug records them once ProfilingParameters is not empty);
// * with CheckpointConfig, checkpointconfig.json: {"LocalPath": map_container_path(LocalPath, default
//   /opt/ml/checkpoints), "S3Uri" as sent}.
std::map<std::string, std::string> container_config_files(const TrainingJobRequest& request, const JobPaths& paths,
                                                          int host_index);

}  // namespace vigil::jobs
