// Error <-> vigil_error in both directions, Result / exception mapping.
#include <gtest/gtest.h>
#include <vigil/sdk/error.hpp>

#include <cstring>
#include <string>
#include <typeinfo>
#include <vector>

#include "fake_host.hpp"

namespace sdk = vigil::sdk;

namespace {

vigil_error fresh_error() {
  vigil_error e{};
  e.struct_size = sizeof(vigil_error);
  return e;
}

// A vigil_error-sized buffer with canary bytes behind it, for callers with a smaller struct_size.
struct Guarded {
  alignas(vigil_error) unsigned char bytes[sizeof(vigil_error) + 64];
  explicit Guarded(uint32_t struct_size) {
    std::memset(bytes, 0xAB, sizeof bytes);
    std::memcpy(bytes, &struct_size, sizeof struct_size);
  }
  vigil_error* err() { return reinterpret_cast<vigil_error*>(bytes); }
  // True when nothing from `from` on was written.
  bool untouched_from(size_t from) const {
    for (size_t i = from; i < sizeof bytes; ++i)
      if (bytes[i] != 0xAB) return false;
    return true;
  }
};

}  // namespace

TEST(Error, FromAbiReadsEveryField) {
  vigil_error e = fresh_error();
  fake::fill_error(&e, VIGIL_E_NO_MORE_DATA, "the end", "t1", 7, VIGIL_MODE_EVAL, 5,
                   VIGIL_ERRF_HAS_REDUCTIONS | VIGIL_ERRF_END_OF_RULE, "w9");
  const sdk::Error x = sdk::Error::from_abi(VIGIL_E_NO_MORE_DATA, &e);
  EXPECT_EQ(x.code, VIGIL_E_NO_MORE_DATA);
  EXPECT_EQ(x.message, "the end");
  EXPECT_EQ(x.tensor, "t1");
  EXPECT_EQ(x.worker, "w9");
  EXPECT_EQ(x.step, 7);
  EXPECT_EQ(x.mode, VIGIL_MODE_EVAL);
  EXPECT_EQ(x.last_step, 5);
  EXPECT_TRUE(x.has_reductions);
  EXPECT_TRUE(x.end_of_rule);
  EXPECT_FALSE(x.truncated);
  EXPECT_EQ(x.class_name(), "NoMoreData");
  EXPECT_TRUE(x.is_stop());
}

TEST(Error, FromAbiTrustsTheReturnedStatusAndToleratesNull) {
  vigil_error e = fresh_error();
  fake::fill_error(&e, VIGIL_E_IO, "disk");
  EXPECT_EQ(sdk::Error::from_abi(VIGIL_E_CORRUPT_DATA, &e).code, VIGIL_E_CORRUPT_DATA);
  const sdk::Error n = sdk::Error::from_abi(VIGIL_E_CANCELLED, nullptr);
  EXPECT_EQ(n.code, VIGIL_E_CANCELLED);
  EXPECT_NE(n.message.find("VIGIL_E_CANCELLED"), std::string::npos);  // a default message
}

TEST(Error, FromAbiReadsOnlyWithinStructSizeAndUnterminatedStrings) {
  vigil_error e = fresh_error();
  fake::fill_error(&e, VIGIL_E_TENSOR_UNAVAILABLE, "msg", "tensor-name", 3);
  e.struct_size = offsetof(vigil_error, tensor) + 4;  // an older, smaller writer
  std::memset(e.tensor, 'x', sizeof e.tensor);        // no NUL inside the visible 4 bytes
  const sdk::Error x = sdk::Error::from_abi(VIGIL_E_TENSOR_UNAVAILABLE, &e);
  EXPECT_EQ(x.step, 3);
  EXPECT_EQ(x.tensor, "xxxx");
  EXPECT_TRUE(x.worker.empty());
  EXPECT_NE(x.message, "msg");  // the message field is past struct_size
}

TEST(Error, ToAbiFillsEveryField) {
  sdk::Error x = sdk::Error::tensor_unavailable_for_step("grad", 12, VIGIL_MODE_TRAIN, true);
  x.worker = "w";
  vigil_error e = fresh_error();
  x.to_abi(&e);
  EXPECT_EQ(e.struct_size, sizeof(vigil_error));
  EXPECT_EQ(e.code, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  EXPECT_STREQ(e.tensor, "grad");
  EXPECT_STREQ(e.worker, "w");
  EXPECT_EQ(e.step, 12);
  EXPECT_EQ(e.mode, VIGIL_MODE_TRAIN);
  EXPECT_EQ(e.flags, uint32_t{VIGIL_ERRF_HAS_REDUCTIONS});
  EXPECT_STREQ(e.message,
               "Value for tensor grad is not available for step 12 with mode TRAIN as it was not saved.This tensor "
               "has reductions saved for this step. You might want to query for the reductions.");
  // Round trip.
  const sdk::Error y = sdk::Error::from_abi(e.code, &e);
  EXPECT_EQ(y.message, x.message);
  EXPECT_EQ(y.tensor, x.tensor);
  EXPECT_EQ(y.has_reductions, x.has_reductions);
}

TEST(Error, ToAbiTruncatesAtUtf8BoundaryAndSetsTheFlag) {
  sdk::Error x{.code = VIGIL_E_INTERNAL, .message = std::string(1100, 'a')};
  vigil_error e = fresh_error();
  x.to_abi(&e);
  EXPECT_EQ(std::strlen(e.message), sizeof(e.message) - 1);
  EXPECT_TRUE(e.flags & VIGIL_ERRF_TRUNCATED);

  // 1022 ASCII bytes then a 3-byte character: only 1 byte of room is left, so the character goes.
  x.message = std::string(1022, 'b') + "\xE2\x82\xAC" + "tail";
  e = fresh_error();
  x.to_abi(&e);
  EXPECT_EQ(std::strlen(e.message), 1022u);
  EXPECT_TRUE(e.flags & VIGIL_ERRF_TRUNCATED);

  // A tensor name that is too long is cut too.
  x = sdk::Error::tensor_unavailable(std::string(300, 't'));
  e = fresh_error();
  x.to_abi(&e);
  EXPECT_EQ(std::strlen(e.tensor), 255u);
  EXPECT_TRUE(e.flags & VIGIL_ERRF_TRUNCATED);

  // Exactly fitting: no flag.
  x = sdk::Error{.code = VIGIL_E_INTERNAL, .message = std::string(1023, 'c')};
  e = fresh_error();
  x.to_abi(&e);
  EXPECT_EQ(std::strlen(e.message), 1023u);
  EXPECT_FALSE(e.flags & VIGIL_ERRF_TRUNCATED);
}

TEST(Error, ToAbiRespectsASmallerStructSize) {
  const sdk::Error x = sdk::Error::tensor_unavailable_for_step("some/tensor", 4, VIGIL_MODE_GLOBAL);
  {
    // The struct ends 8 bytes into message: 7 characters and a NUL, flagged as cut.
    const uint32_t size = offsetof(vigil_error, message) + 8;
    Guarded g(size);
    x.to_abi(g.err());
    EXPECT_TRUE(g.untouched_from(size));
    EXPECT_EQ(g.err()->code, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
    EXPECT_STREQ(g.err()->tensor, "some/tensor");
    EXPECT_EQ(std::string(g.err()->message), x.message.substr(0, 7));
    EXPECT_TRUE(g.err()->flags & VIGIL_ERRF_TRUNCATED);
  }
  {
    // The struct ends before the strings: only the numbers are written, nothing is "cut".
    const uint32_t size = offsetof(vigil_error, tensor);
    Guarded g(size);
    x.to_abi(g.err());
    EXPECT_TRUE(g.untouched_from(size));
    EXPECT_EQ(g.err()->step, 4);
    EXPECT_FALSE(g.err()->flags & VIGIL_ERRF_TRUNCATED);
  }
  {
    // Only struct_size and code.
    const uint32_t size = offsetof(vigil_error, flags);
    Guarded g(size);
    x.to_abi(g.err());
    EXPECT_TRUE(g.untouched_from(size));
    EXPECT_EQ(g.err()->code, VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  }
  {
    // struct_size 0: nothing at all.
    Guarded g(0);
    x.to_abi(g.err());
    EXPECT_TRUE(g.untouched_from(sizeof(uint32_t)));
  }
  x.to_abi(nullptr);  // NULL is fine
}

TEST(Error, ToAbiClearsStaleFields) {
  vigil_error e = fresh_error();
  fake::fill_error(&e, VIGIL_E_INVALID_WORKER, "old", "old-tensor", 99, VIGIL_MODE_EVAL, 5, 0, "old-worker");
  sdk::Error::internal("new").to_abi(&e);
  EXPECT_STREQ(e.message, "new");
  EXPECT_STREQ(e.tensor, "");
  EXPECT_STREQ(e.worker, "");
  EXPECT_EQ(e.step, 0);
}

TEST(Error, ClassNamesAndFactoriesUseSmdebugWording) {
  EXPECT_EQ(sdk::Error::step_unavailable(3, VIGIL_MODE_EVAL).message,
            "Step 3 of mode EVAL is not available as it was not saved");
  EXPECT_EQ(sdk::Error::no_more_data(9, VIGIL_MODE_GLOBAL, 6).message,
            "Looking for step 9 of mode GLOBAL and reached end of training. Max step available is 6");
  EXPECT_EQ(sdk::Error::tensor_unavailable("x").message, "Tensor x was not saved.");
  EXPECT_EQ(sdk::Error::invalid_worker("w").class_name(), "InvalidWorker");
  EXPECT_EQ(sdk::Error::condition_met("R", 2, true).class_name(), "RuleEvaluationConditionMet");
  EXPECT_EQ(sdk::Error::out_of_memory().class_name(), "MemoryError");
  EXPECT_EQ(sdk::Error{.code = 555}.class_name(), "SMDebugError");
  EXPECT_EQ(sdk::status_name(VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP), "VIGIL_E_SHAPE_UNAVAILABLE_FOR_STEP");
  EXPECT_EQ(sdk::Error::internal("m").to_string(), "SMDebugRuntimeError: m");
}

namespace {

// Throws what value_or_throw makes of `code` and returns the caught class name via a matcher chain.
template <class Expected>
void expect_thrown_as(sdk::Error e) {
  const vigil_status code = e.code;
  try {
    sdk::value_or_throw(sdk::Result<int>(sdk::fail(std::move(e))));
    FAIL() << "no exception";
  } catch (const Expected& ex) {
    EXPECT_EQ(ex.code(), code);
    EXPECT_EQ(ex.error().code, code);
  } catch (...) {
    FAIL() << "wrong exception class for code " << code;
  }
}

}  // namespace

TEST(Error, ValueOrThrowRaisesTheMatchingClass) {
  expect_thrown_as<sdk::TensorUnavailableForStep>(sdk::Error::tensor_unavailable_for_step("t", 1));
  expect_thrown_as<sdk::TensorUnavailable>(sdk::Error::tensor_unavailable("t"));
  expect_thrown_as<sdk::StepUnavailable>(sdk::Error::step_unavailable(1));
  expect_thrown_as<sdk::StepNotYetAvailable>(sdk::Error::step_not_yet_available(1));
  expect_thrown_as<sdk::NoMoreData>(sdk::Error::no_more_data(1, VIGIL_MODE_GLOBAL, 0));
  expect_thrown_as<sdk::IndexReaderException>(sdk::Error::index_reader("bad index"));
  expect_thrown_as<sdk::InvalidWorker>(sdk::Error::invalid_worker("w"));
  expect_thrown_as<sdk::ShapeUnavailableForStep>(sdk::Error::shape_unavailable_for_step("t", 1));
  expect_thrown_as<sdk::RuleEvaluationConditionMet>(sdk::Error::condition_met("R", 1));
  expect_thrown_as<sdk::InsufficientInformationForRuleInvocation>(sdk::Error::insufficient_information("R", "m"));
  expect_thrown_as<sdk::NoMoreProfilerData>(sdk::Error::no_more_profiler_data("m"));
  expect_thrown_as<sdk::MissingCollectionFiles>(sdk::Error::missing_collection_files());
  expect_thrown_as<sdk::InvalidCollectionConfiguration>(sdk::Error::invalid_collection_configuration("m"));
  expect_thrown_as<sdk::SMDebugValueError>(sdk::Error::invalid_argument("m"));
  expect_thrown_as<sdk::SMDebugTypeError>(sdk::Error::type_error("m"));
  expect_thrown_as<sdk::SMDebugNotImplementedError>(sdk::Error::not_supported("m"));
  expect_thrown_as<sdk::SMDebugRuntimeError>(sdk::Error::internal("m"));
  expect_thrown_as<sdk::SMDebugRuntimeError>(sdk::Error{.code = VIGIL_E_CORRUPT_DATA, .message = "m"});
  expect_thrown_as<sdk::SMDebugError>(sdk::Error::cancelled());
  expect_thrown_as<sdk::SMDebugError>(sdk::Error{.code = 4242, .message = "extension code"});
}

// throw_error is generated from status.h's list: every code whose class is smdebug's throws the SDK class of
// that name; Vigil's own codes throw SMDebugError itself.
TEST(Error, ThrowErrorFollowsTheStatusList) {
  const auto check = [](vigil_status code, const char* exception, bool smdebug) {
    SCOPED_TRACE(exception);
    EXPECT_EQ(sdk::Error{.code = code}.class_name(), exception);
    if (code == VIGIL_OK) return;
    try {
      sdk::throw_error(sdk::Error{.code = code, .message = "m"});
    } catch (const sdk::SMDebugError& e) {
      EXPECT_EQ(e.code(), code);
      const std::string type = typeid(e).name();  // mangled: <length><name> for each part
      if (smdebug) {
        EXPECT_NE(type.find(std::to_string(std::strlen(exception)) + exception), std::string::npos) << type;
      } else {
        EXPECT_TRUE(typeid(e) == typeid(sdk::SMDebugError)) << type;
      }
    }
  };
  constexpr bool SMDEBUG = true, VIGIL = false;
#define ROW(name, cpp_name, value, cls, exception, origin) check(value, #exception, origin);
  VIGIL_STATUS_LIST(ROW)
#undef ROW
}

TEST(ErrorRecord, CopyCStringCutsOnlyAtCharacterBoundaries) {
  char buf[8];
  // Fits exactly (7 bytes + NUL).
  EXPECT_FALSE(sdk::copy_c_string(buf, sizeof buf, "abcd\xE2\x82\xAC"));
  EXPECT_STREQ(buf, "abcd\xE2\x82\xAC");
  // A 3-byte character straddling the limit is left out whole.
  EXPECT_TRUE(sdk::copy_c_string(buf, sizeof buf, "abcde\xE2\x82\xAC"));
  EXPECT_STREQ(buf, "abcde");
  // A 4-byte character after 4 ASCII bytes: 3 of its bytes would fit, none is written.
  EXPECT_TRUE(sdk::copy_c_string(buf, sizeof buf, "abcd\xF0\x9F\x98\x80"));
  EXPECT_STREQ(buf, "abcd");
  // 2-byte characters only: 3 whole ones fit in 7 bytes.
  EXPECT_TRUE(sdk::copy_c_string(buf, sizeof buf, "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"));
  EXPECT_STREQ(buf, "\xC3\xA9\xC3\xA9\xC3\xA9");
  // No room but the NUL; capacity 0 writes nothing and reports a cut for a non-empty string.
  EXPECT_TRUE(sdk::copy_c_string(buf, 1, "x"));
  EXPECT_STREQ(buf, "");
  EXPECT_TRUE(sdk::copy_c_string(buf, 0, "x"));
  EXPECT_FALSE(sdk::copy_c_string(buf, 0, ""));
  // The source may be the destination itself.
  std::strcpy(buf, "same");
  EXPECT_FALSE(sdk::copy_c_string(buf, sizeof buf, std::string_view(buf)));
  EXPECT_STREQ(buf, "same");
}

TEST(ErrorRecord, WriteOkSetsOnlyTheCode) {
  vigil_error e = fresh_error();
  fake::fill_error(&e, VIGIL_E_IO, "stale", "t", 4);
  sdk::write_error_ok(&e);
  EXPECT_EQ(e.code, VIGIL_OK);
  EXPECT_STREQ(e.message, "stale");
  EXPECT_EQ(e.step, 4);
  Guarded g(offsetof(vigil_error, code));  // too small for the code: untouched
  sdk::write_error_ok(g.err());
  EXPECT_TRUE(g.untouched_from(sizeof(uint32_t)));
  sdk::write_error_ok(nullptr);
}

TEST(ErrorRecord, ReadThenWriteInPlaceKeepsEveryString) {
  vigil_error e = fresh_error();
  fake::fill_error(&e, VIGIL_S_RULE_CONDITION_MET, "met", "t", 3, VIGIL_MODE_TRAIN, -1, VIGIL_ERRF_END_OF_RULE, "w");
  sdk::ErrorRecord r = sdk::read_error_record(VIGIL_S_RULE_CONDITION_MET, &e);
  EXPECT_TRUE(r.rule.empty());
  r.rule = "MyRule";
  sdk::write_error_record(&e, r);  // r's other strings point into e
  EXPECT_STREQ(e.rule, "MyRule");
  EXPECT_STREQ(e.message, "met");
  EXPECT_STREQ(e.tensor, "t");
  EXPECT_STREQ(e.worker, "w");
  EXPECT_EQ(e.flags, uint32_t{VIGIL_ERRF_END_OF_RULE});
  EXPECT_EQ(e.mode, VIGIL_MODE_TRAIN);
}

TEST(Error, ExceptionsCarryTheirSmdebugFields) {
  const sdk::TensorUnavailableForStep t("grad", 5, VIGIL_MODE_EVAL, true);
  EXPECT_EQ(t.tname(), "grad");
  EXPECT_EQ(t.step(), 5);
  EXPECT_EQ(t.mode(), VIGIL_MODE_EVAL);
  EXPECT_TRUE(t.has_reductions());
  EXPECT_STREQ(t.what(), t.error().message.c_str());
  const sdk::NoMoreData n(9, VIGIL_MODE_TRAIN, 8);
  EXPECT_EQ(n.last_step(), 8);
  const sdk::RuleEvaluationConditionMet c("MyRule", 3, true);
  EXPECT_EQ(c.rule_name(), "MyRule");
  EXPECT_TRUE(c.end_of_rule());
  EXPECT_EQ(c.code(), VIGIL_S_RULE_CONDITION_MET);
  const sdk::InvalidWorker w("w7");
  EXPECT_EQ(w.worker(), "w7");
  // All derive from SMDebugError and std::exception.
  const sdk::SMDebugError& base = t;
  const std::exception& std_base = n;
  EXPECT_EQ(base.code(), VIGIL_E_TENSOR_UNAVAILABLE_FOR_STEP);
  EXPECT_NE(std::string(std_base.what()).find("Max step available is 8"), std::string::npos);
}

TEST(Error, ValueOrThrowPassesValuesThrough) {
  EXPECT_EQ(sdk::value_or_throw(sdk::Result<int>(7)), 7);
  EXPECT_NO_THROW(sdk::value_or_throw(sdk::Result<void>()));
  EXPECT_THROW(sdk::value_or_throw(sdk::Result<void>(sdk::fail(sdk::Error::step_unavailable(1)))),
               sdk::StepUnavailable);
  auto moved = sdk::value_or_throw(sdk::Result<std::vector<std::string>>(std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(moved.size(), 2u);
}

namespace {

sdk::Result<int> half(int x) {
  if (x % 2) return sdk::fail(sdk::Error::invalid_argument("odd"));
  return x / 2;
}
sdk::Result<int> quarter(int x) {
  VIGIL_TRY(const int h, half(x));
  VIGIL_TRY(int q, half(h));
  return q;
}
sdk::Result<void> even(int x) {
  if (x % 2) return sdk::fail(sdk::Error::invalid_argument("odd"));
  return {};
}
sdk::Result<void> check_even(int x) {
  VIGIL_TRY_VOID(even(x));
  return {};
}

}  // namespace

TEST(Error, TryMacrosPropagate) {
  EXPECT_EQ(quarter(8).value(), 2);
  ASSERT_FALSE(quarter(6).has_value());
  EXPECT_EQ(quarter(6).error().message, "odd");
  EXPECT_TRUE(check_even(4).has_value());
  EXPECT_EQ(check_even(3).error().code, VIGIL_E_INVALID_ARGUMENT);
}
