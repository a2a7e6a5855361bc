// The status-code table: ABI codes and host error codes are the same numbers, each names one
// smdebug exception, and one classifier decides how the invoke loop treats each.
#include <gtest/gtest.h>

#include <cstring>

#include <vigil/vigil.h>

#include "common/error.h"
#include "plugin_host/host_services.h"

namespace vigil {
namespace {

TEST(StatusCodes, HostCodesAreAbiCodes) {
  EXPECT_EQ(int(ErrorCode::InvalidArgument), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(int(ErrorCode::OutOfMemory), VIGIL_E_OUT_OF_MEMORY);
  EXPECT_EQ(int(ErrorCode::NotSupported), VIGIL_E_NOT_SUPPORTED);
  EXPECT_EQ(int(ErrorCode::VersionMismatch), VIGIL_E_VERSION_MISMATCH);
  EXPECT_EQ(int(ErrorCode::Cancelled), VIGIL_E_CANCELLED);
  EXPECT_EQ(int(ErrorCode::Timeout), VIGIL_E_TIMEOUT);
  EXPECT_EQ(int(ErrorCode::Internal), VIGIL_E_INTERNAL);
  EXPECT_EQ(int(ErrorCode::PluginFailure), VIGIL_E_PLUGIN_FAILURE);
  EXPECT_EQ(int(ErrorCode::CorruptData), VIGIL_E_CORRUPT_DATA);
  EXPECT_EQ(int(ErrorCode::Io), VIGIL_E_IO);
  EXPECT_EQ(int(ErrorCode::TypeError), VIGIL_E_TYPE_ERROR);
  EXPECT_EQ(int(ErrorCode::TensorUnavailableForStep), VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  EXPECT_EQ(int(ErrorCode::TensorUnavailable), VIGIL_E_TENSOR_UNAVAILABLE);
  EXPECT_EQ(int(ErrorCode::StepUnavailable), VIGIL_E_STEP_UNAVAILABLE);
  EXPECT_EQ(int(ErrorCode::StepNotYetAvailable), VIGIL_E_STEP_NOT_YET_AVAILABLE);
  EXPECT_EQ(int(ErrorCode::NoMoreData), VIGIL_E_NO_MORE_DATA);
  EXPECT_EQ(int(ErrorCode::IndexReader), VIGIL_E_INDEX_READER);
  EXPECT_EQ(int(ErrorCode::InvalidWorker), VIGIL_E_INVALID_WORKER);
  EXPECT_EQ(int(ErrorCode::RuleConditionMet), VIGIL_S_RULE_CONDITION_MET);
  EXPECT_EQ(int(ErrorCode::InsufficientInformation), VIGIL_E_INSUFFICIENT_INFORMATION);
  EXPECT_EQ(int(ErrorCode::ShapeUnavailableForStep), VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP);
  EXPECT_EQ(int(ErrorCode::NoMoreProfilerData), VIGIL_E_NO_MORE_PROFILER_DATA);
  EXPECT_EQ(int(ErrorCode::MissingCollectionFiles), VIGIL_E_MISSING_COLLECTION_FILES);
  EXPECT_EQ(int(ErrorCode::InvalidCollectionConfiguration), VIGIL_E_INVALID_COLLECTION_CONFIGURATION);
}

TEST(StatusCodes, SmdebugClassNamesAgree) {
  for (int code : {1, 3, 7, 9, 10, 11, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112}) {
    const char* abi = vigil_status_smdebug_class(code);
    ASSERT_NE(abi, nullptr) << code;
    EXPECT_EQ(std::string_view(abi), smdebug_class_name(ErrorCode(code))) << code;
  }
  EXPECT_EQ(vigil_status_smdebug_class(4242), nullptr);
}

TEST(StatusCodes, Classification) {
  EXPECT_EQ(vigil_status_classify(VIGIL_OK), VIGIL_CLASS_OK);
  for (int s : {100, 101, 102}) EXPECT_TRUE(vigil_status_is_skip(s)) << s;  // smdebug's invoke_rule swallows these
  EXPECT_TRUE(vigil_status_is_wait(VIGIL_E_STEP_NOT_YET_AVAILABLE));
  for (int s : {104, 110, 5}) EXPECT_TRUE(vigil_status_is_stop(s)) << s;
  EXPECT_TRUE(vigil_status_is_signal(VIGIL_S_RULE_CONDITION_MET));
  for (int s : {1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 105, 106, 108, 109, 111, 112, 4242, -1, 1000})
    EXPECT_TRUE(vigil_status_is_failure(s)) << s;
}

TEST(StatusCodes, ErrorCrossesTheAbiWithItsFields) {
  Error e = Error::tensor_unavailable_for_step("relu1", 7, Mode::Train, true);
  vigil_error abi{};
  abi.struct_size = sizeof(abi);
  plugins::fill_abi_error(e, &abi);
  EXPECT_EQ(abi.code, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  EXPECT_EQ(abi.step, 7);
  EXPECT_EQ(abi.mode, VIGIL_MODE_TRAIN);
  EXPECT_TRUE(abi.flags & VIGIL_ERRF_HAS_REDUCTIONS);
  EXPECT_STREQ(abi.tensor, "relu1");
  Error back = plugins::error_from_abi(abi.code, abi);
  EXPECT_EQ(back.message, e.message);
  EXPECT_EQ(back.class_name(), "TensorUnavailableForStep");

  // A caller built against a smaller error struct gets only what fits; a long message is cut.
  vigil_error small{};
  small.struct_size = offsetof(vigil_error, tensor);
  plugins::fill_abi_error(e, &small);
  EXPECT_EQ(small.code, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  EXPECT_EQ(small.tensor[0], '\0');
  Error long_one = Error::invalid_argument(std::string(5000, 'x'));
  plugins::fill_abi_error(long_one, &abi);
  EXPECT_TRUE(abi.flags & VIGIL_ERRF_TRUNCATED);
  EXPECT_EQ(std::strlen(abi.message), sizeof(abi.message) - 1);
}

}  // namespace
}  // namespace vigil
