// SageMaker's container facts (format/sagemaker_container.h): every path lies in the container's
// /opt/ml, and the config files' default paths are the ones smdebug uses.
#include "format/sagemaker_container.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace vigil::format::sagemaker {
namespace {

TEST(SageMakerContainer, EveryPathIsInsideTheContainerRoot) {
  for (std::string_view path : {kInputDir, kInputConfigDir, kInputDataDir, kCodeDir, kModelDir, kOutputDir,
                                kOutputDataDir, kOutputIntermediateDir, kCheckpointDir, kDebugOutputDir,
                                kProfilerOutputDir})
    EXPECT_TRUE(path.starts_with(std::string(kContainerRoot) + "/")) << path;
}

TEST(SageMakerContainer, ConfigFilesDefaultToTheInputConfigFolder) {
  EXPECT_EQ(default_config_path(kDebugHookConfigFile), "/opt/ml/input/config/debughookconfig.json");
  EXPECT_EQ(default_config_path(kProfilerConfigFile), "/opt/ml/input/config/profilerconfig.json");
  EXPECT_EQ(default_config_path(kTensorBoardConfigFile), "/opt/ml/input/config/tensorboardoutputconfig.json");
}

TEST(SageMakerContainer, ProfilingIntervalsAreSageMakersEnumInOrder) {
  EXPECT_TRUE(std::is_sorted(kProfilingIntervalsMs.begin(), kProfilingIntervalsMs.end()));
  EXPECT_EQ(kProfilingIntervalsMs.front(), 100);
  EXPECT_EQ(kProfilingIntervalsMs.back(), 60000);
}

}  // namespace
}  // namespace vigil::format::sagemaker
