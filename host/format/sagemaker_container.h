// SageMaker's training container as smdebug and the training toolkit find it (sagemaker-api §3.1,
// smdebug-format §7, §8.4): the /opt/ml paths, the config files under input/config, the variables
// that point at them, and the profiling intervals. The one statement of each of these facts: the
// host's jobs, profiler, trial and cli read them here, and the Python package reads them through
// _vigil.sagemaker (bindings/src/sagemaker.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace vigil::format::sagemaker {

// ---- paths inside the container ----
inline constexpr std::string_view kContainerRoot = "/opt/ml";
inline constexpr std::string_view kInputDir = "/opt/ml/input";
inline constexpr std::string_view kInputConfigDir = "/opt/ml/input/config";
inline constexpr std::string_view kInputDataDir = "/opt/ml/input/data";  // one folder per channel
inline constexpr std::string_view kCodeDir = "/opt/ml/code";
inline constexpr std::string_view kModelDir = "/opt/ml/model";
inline constexpr std::string_view kOutputDir = "/opt/ml/output";
inline constexpr std::string_view kOutputDataDir = "/opt/ml/output/data";
inline constexpr std::string_view kOutputIntermediateDir = "/opt/ml/output/intermediate";
inline constexpr std::string_view kCheckpointDir = "/opt/ml/checkpoints";  // CheckpointConfig.LocalPath's default
inline constexpr std::string_view kDebugOutputDir = "/opt/ml/output/tensors";      // DebugHookConfig.LocalPath's default
inline constexpr std::string_view kProfilerOutputDir = "/opt/ml/output/profiler";  // ProfilerConfig's LocalPath default

// ---- files in kInputConfigDir ----
inline constexpr std::string_view kHyperparametersFile = "hyperparameters.json";
inline constexpr std::string_view kResourceConfigFile = "resourceconfig.json";
inline constexpr std::string_view kInputDataConfigFile = "inputdataconfig.json";
inline constexpr std::string_view kDebugHookConfigFile = "debughookconfig.json";
inline constexpr std::string_view kTensorBoardConfigFile = "tensorboardoutputconfig.json";
inline constexpr std::string_view kProfilerConfigFile = "profilerconfig.json";
inline constexpr std::string_view kCheckpointConfigFile = "checkpointconfig.json";

// kInputConfigDir/<file>: where a config file is when no variable says otherwise.
inline std::string default_config_path(std::string_view file) {
  return std::string(kInputConfigDir) + "/" + std::string(file);
}

// ---- environment variables ----
inline constexpr std::string_view kDebugHookConfigVariable = "SMDEBUG_CONFIG_FILE_PATH";
inline constexpr std::string_view kTensorBoardConfigVariable = "TENSORBOARD_CONFIG_FILE_PATH";
inline constexpr std::string_view kProfilerConfigVariable = "SMPROFILER_CONFIG_PATH";
inline constexpr std::string_view kCheckpointConfigVariable = "CHECKPOINT_CONFIG_FILE_PATH";
inline constexpr std::string_view kInputConfigDirVariable = "SM_INPUT_CONFIG_DIR";  // the training toolkit's
inline constexpr std::string_view kTrainingJobNameVariable = "TRAINING_JOB_NAME";  // set: a SageMaker job
inline constexpr std::string_view kUseSmdebugVariable = "USE_SMDEBUG";            // false or 0: capture off
// smdebug's trial knobs: steps to wait for an incomplete step, seconds between end-marker checks.
inline constexpr std::string_view kIncompleteStepWaitWindowVariable = "SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW";
inline constexpr std::string_view kTrainingEndDelayRefreshVariable = "SMDEBUG_TRAINING_END_DELAY_REFRESH";

// ---- profiling ----
// ProfilingIntervalInMilliseconds values SageMaker accepts (its enum) and the profiler samples at.
inline constexpr std::array<int64_t, 6> kProfilingIntervalsMs = {100, 200, 500, 1000, 5000, 60000};

}  // namespace vigil::format::sagemaker
