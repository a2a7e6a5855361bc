// _vigil.sagemaker: SageMaker's container facts (format/sagemaker_container.h) and the end-of-training
// marker (format/trial_layout.h), for the Python package, which restates none of them.
#include "bindings.h"
#include "format/sagemaker_container.h"
#include "format/trial_layout.h"
#include "vigil/sdk/text.hpp"


namespace vigil::python {

void register_sagemaker(py::module_& m) {
  namespace sm = format::sagemaker;
  py::module_ s = m.def_submodule("sagemaker", "SageMaker's training container: /opt/ml paths, config files, "
                                               "environment variables, profiling intervals, the end marker");
  auto set = [&](const char* name, std::string_view value) { s.attr(name) = py::str(value.data(), value.size()); };
  set("CONTAINER_ROOT", sm::kContainerRoot);
  set("INPUT_DIR", sm::kInputDir);
  set("INPUT_CONFIG_DIR", sm::kInputConfigDir);
  set("INPUT_DATA_DIR", sm::kInputDataDir);
  set("CODE_DIR", sm::kCodeDir);
  set("MODEL_DIR", sm::kModelDir);
  set("OUTPUT_DIR", sm::kOutputDir);
  set("OUTPUT_DATA_DIR", sm::kOutputDataDir);
  set("OUTPUT_INTERMEDIATE_DIR", sm::kOutputIntermediateDir);
  set("CHECKPOINT_DIR", sm::kCheckpointDir);
  set("DEBUG_OUTPUT_DIR", sm::kDebugOutputDir);
  set("PROFILER_OUTPUT_DIR", sm::kProfilerOutputDir);

  set("HYPERPARAMETERS_FILE", sm::kHyperparametersFile);
  set("RESOURCE_CONFIG_FILE", sm::kResourceConfigFile);
  set("INPUT_DATA_CONFIG_FILE", sm::kInputDataConfigFile);
  set("DEBUG_HOOK_CONFIG_FILE", sm::kDebugHookConfigFile);
  set("TENSORBOARD_CONFIG_FILE", sm::kTensorBoardConfigFile);
  set("PROFILER_CONFIG_FILE", sm::kProfilerConfigFile);
  set("CHECKPOINT_CONFIG_FILE", sm::kCheckpointConfigFile);
  s.def("default_config_path", &sm::default_config_path, py::arg("file"),
        "INPUT_CONFIG_DIR/<file>: where a config file is when no variable says otherwise.");

  set("DEBUG_HOOK_CONFIG_VARIABLE", sm::kDebugHookConfigVariable);
  set("TENSORBOARD_CONFIG_VARIABLE", sm::kTensorBoardConfigVariable);
  set("PROFILER_CONFIG_VARIABLE", sm::kProfilerConfigVariable);
  set("CHECKPOINT_CONFIG_VARIABLE", sm::kCheckpointConfigVariable);
  set("INPUT_CONFIG_DIR_VARIABLE", sm::kInputConfigDirVariable);
  set("TRAINING_JOB_NAME_VARIABLE", sm::kTrainingJobNameVariable);
  set("USE_SMDEBUG_VARIABLE", sm::kUseSmdebugVariable);
  set("INCOMPLETE_STEP_WAIT_WINDOW_VARIABLE", sm::kIncompleteStepWaitWindowVariable);
  set("TRAINING_END_DELAY_REFRESH_VARIABLE", sm::kTrainingEndDelayRefreshVariable);

  s.attr("PROFILING_INTERVALS_MS") = py::tuple(py::cast(std::vector<int64_t>(sm::kProfilingIntervalsMs.begin(),
                                                                             sm::kProfilingIntervalsMs.end())));
  set("END_OF_TRAINING_MARKER", format::kEndOfTrainingMarker);
  s.def("parse_bool", [](std::string_view text) { return sdk::parse_bool(text); }, py::arg("text"),
        "SageMaker's string boolean (vigil/sdk/text.hpp): true/false in any case or 1/0, around "
        "whitespace; None for anything else.");
}

}  // namespace vigil::python
