// The status-code table: ABI codes and host error codes are the same numbers, each names one
// smdebug exception, and one classifier decides how the invoke loop treats each.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include <vigil/sdk/messages.hpp>
#include <vigil/vigil.h>

#include "common/error.h"
#include "plugin_host/host_services.h"

namespace vigil {
namespace {

namespace sdk = vigil::sdk;

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

// Every row of status.h's list: the enum holds its value, and each generated table (the ABI's name,
// class and smdebug lookups, the SDK's names, the host's ErrorCode and class names) says what the row says.
TEST(StatusCodes, EveryGeneratedTableAgreesWithTheList) {
  std::set<int> listed;
  const auto check = [&](vigil_status constant, const char* name, int host_value, int value,
                         vigil_status_class expected_class, const char* exception, bool smdebug) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(listed.insert(value).second) << "a value listed twice";
    EXPECT_EQ(constant, value);
    EXPECT_EQ(host_value, value);
    ASSERT_NE(vigil_status_name(value), nullptr);
    EXPECT_STREQ(vigil_status_name(value), name);
    EXPECT_EQ(sdk::status_name(value), name);
    EXPECT_EQ(vigil_status_classify(value), expected_class);
    EXPECT_NE(std::strlen(exception), 0u);
    EXPECT_EQ(sdk::exception_name(value), exception);
    EXPECT_EQ(smdebug_class_name(static_cast<ErrorCode>(value)), exception);
    if (smdebug) {
      ASSERT_NE(vigil_status_smdebug_class(value), nullptr);
      EXPECT_STREQ(vigil_status_smdebug_class(value), exception);
    } else {
      EXPECT_EQ(vigil_status_smdebug_class(value), nullptr);
    }
  };
  constexpr bool SMDEBUG = true, VIGIL = false;
#define ROW(name, cpp_name, value, cls, exception, origin) \
  check(name, #name, int(ErrorCode::cpp_name), value, VIGIL_CLASS_##cls, #exception, origin);
  VIGIL_STATUS_LIST(ROW)
#undef ROW
  EXPECT_EQ(listed.size(), 25u);  // 0, 1..11 and 100..112 today; a new code adds a row
  // Nothing outside the list has a name; unknown codes fail.
  for (int code = -5; code < 2000; ++code) {
    if (listed.contains(code)) continue;
    EXPECT_EQ(vigil_status_name(code), nullptr) << code;
    EXPECT_EQ(vigil_status_smdebug_class(code), nullptr) << code;
    EXPECT_TRUE(vigil_status_is_failure(code)) << code;
    EXPECT_EQ(sdk::status_name(code), "VIGIL_E_UNKNOWN") << code;
    EXPECT_EQ(sdk::exception_name(code), "SMDebugError") << code;
  }
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
  plugin_host::fill_abi_error(e, &abi);
  EXPECT_EQ(abi.code, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  EXPECT_EQ(abi.step, 7);
  EXPECT_EQ(abi.mode, VIGIL_MODE_TRAIN);
  EXPECT_TRUE(abi.flags & VIGIL_ERRF_HAS_REDUCTIONS);
  EXPECT_STREQ(abi.tensor, "relu1");
  Error back = plugin_host::error_from_abi(abi.code, abi);
  EXPECT_EQ(back.message, e.message);
  EXPECT_EQ(back.class_name(), "TensorUnavailableForStep");

  // A caller built against a smaller error struct gets only what fits; a long message is cut.
  vigil_error small{};
  small.struct_size = offsetof(vigil_error, tensor);
  plugin_host::fill_abi_error(e, &small);
  EXPECT_EQ(small.code, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  EXPECT_EQ(small.tensor[0], '\0');
  Error long_one = Error::invalid_argument(std::string(5000, 'x'));
  plugin_host::fill_abi_error(long_one, &abi);
  EXPECT_TRUE(abi.flags & VIGIL_ERRF_TRUNCATED);
  EXPECT_EQ(std::strlen(abi.message), sizeof(abi.message) - 1);
}

// status.h: a string that does not fit is cut at a UTF-8 character boundary, flagged.
TEST(StatusCodes, HostErrorRecordsCutOnACharacterBoundary) {
  const std::string euro = "\xE2\x82\xAC";  // 3 bytes
  vigil_error abi{};
  abi.struct_size = sizeof(abi);
  // 1020 + 3 bytes fill the 1023 usable bytes exactly: nothing cut.
  plugin_host::fill_abi_error(Error::invalid_argument(std::string(1020, 'a') + euro), &abi);
  EXPECT_EQ(std::strlen(abi.message), 1023u);
  EXPECT_FALSE(abi.flags & VIGIL_ERRF_TRUNCATED);
  // One byte more: the character would straddle the limit, so all of it goes.
  plugin_host::fill_abi_error(Error::invalid_argument(std::string(1021, 'a') + euro), &abi);
  EXPECT_EQ(std::string(abi.message), std::string(1021, 'a'));
  EXPECT_TRUE(abi.flags & VIGIL_ERRF_TRUNCATED);
  // A tensor name of 2-byte characters, one byte past the 255 usable: the last whole one is kept out.
  std::string name;
  while (name.size() < 256) name += "\xC3\xA9";  // é
  plugin_host::fill_abi_error(Error::tensor_unavailable(name), &abi);
  EXPECT_EQ(std::strlen(abi.tensor), 254u);
  EXPECT_EQ(std::string(abi.tensor), name.substr(0, 254));
  EXPECT_TRUE(abi.flags & VIGIL_ERRF_TRUNCATED);
  // A 4-byte character at the very end of the worker field.
  const std::string worker = std::string(125, 'w') + "\xF0\x9F\x98\x80";  // 129 bytes
  plugin_host::fill_abi_error(Error::invalid_worker(worker), &abi);
  EXPECT_EQ(std::string(abi.worker), std::string(125, 'w'));
}

TEST(StatusCodes, HostReadsAPluginErrorAsFarAsItsStructSize) {
  vigil_error abi{};
  abi.struct_size = sizeof(abi);
  plugin_host::fill_abi_error(Error::no_more_data(9, Mode::Eval, 6), &abi);
  abi.struct_size = offsetof(vigil_error, tensor);  // an older plugin's record: the numbers only
  const Error e = plugin_host::error_from_abi(VIGIL_E_NO_MORE_DATA, abi);
  EXPECT_EQ(e.code, ErrorCode::NoMoreData);
  EXPECT_EQ(e.step, 9);
  EXPECT_EQ(e.mode, Mode::Eval);
  EXPECT_EQ(e.last_step, 6);
  EXPECT_EQ(e.message, "VIGIL_E_NO_MORE_DATA (status 104)");  // the message lay past its struct_size
}

// status.h: on VIGIL_OK the callee sets err->code to VIGIL_OK and leaves the rest as it was.
TEST(StatusCodes, HostServicesSetOnlyTheCodeOnSuccess) {
  vigil_session session;
  vigil_error err{};
  err.struct_size = sizeof(err);
  err.code = VIGIL_E_INTERNAL;
  std::strcpy(err.message, "left from an earlier call");
  ASSERT_EQ(plugin_host::host_api()->report_evidence(&session, "{\"x\": 1}", &err), VIGIL_OK);
  EXPECT_EQ(err.code, VIGIL_OK);
  EXPECT_STREQ(err.message, "left from an earlier call");
  // A failure fills the record.
  ASSERT_EQ(plugin_host::host_api()->report_evidence(&session, nullptr, &err), VIGIL_E_INVALID_ARGUMENT);
  EXPECT_EQ(err.code, VIGIL_E_INVALID_ARGUMENT);
  EXPECT_STRNE(err.message, "left from an earlier call");
}

}  // namespace
}  // namespace vigil
