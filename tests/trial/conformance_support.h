// Support code for the smdebug conformance suite (conformance_test.cpp): loading the fixtures'
// expected.json, a failure reporter that names fixture / tensor / step / field and caps the noise,
// numeric comparison with tolerances suited to numpy's float arithmetic, and an independent
// (test-only) decoder of the fixtures' raw tensor records used to build reference answers where
// Vigil deliberately differs from smdebug (int8 read as signed, int16 decoded, element-wise norms).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/mode.h"
#include "trial/trial.h"

namespace conf {

using json = nlohmann::json;

// ---- fixtures ----

std::filesystem::path fixtures_root();                 // <VIGIL_SHARED_DIR>/fixtures/smdebug-real
std::vector<std::string> list_fixtures();              // names with both <name>/ and <name>.expected.json, sorted
const json& expected_json(const std::string& fixture);  // parsed once per process
// A fixture name with this suffix stands for that fixture written again by Vigil's writer.
inline constexpr std::string_view kRewrittenSuffix = "@vigil-writer";
std::string base_fixture(const std::string& fixture);
std::filesystem::path trial_dir(const std::string& fixture);
// One Trial per fixture per process (smdebug's answers come from one trial object).
vigil::Result<std::shared_ptr<vigil::Trial>> shared_trial(const std::string& fixture);

// ---- small helpers ----

std::optional<vigil::Mode> mode_from_name(std::string_view name);  // "TRAIN" ... "GLOBAL"
std::string mode_str(vigil::Mode m);
std::string state_str(vigil::StepState s);  // "UNAVAILABLE" / "AVAILABLE" / "NOT_YET_AVAILABLE"
std::string describe(const vigil::Error& e);  // "<class>: <message>"
std::string join(const std::vector<std::string>& v);
std::string join(const std::vector<int64_t>& v);
std::vector<std::string> json_strings(const json& j);
std::vector<int64_t> json_ints(const json& j);
// The numpy name of a Vigil element type ("float32", "int8", "bool", "str").
std::string numpy_name(vigil::ElementType t);

// ---- reporting ----

// Counts comparisons and reports each mismatch as a non-fatal gtest failure naming the fixture and
// the place ("tensor=X step=3 field=sum"); after `cap` failures the rest are only counted, and one
// final failure says how many were suppressed. Prints a one-line tally when destroyed.
class Reporter {
 public:
  Reporter(std::string fixture, std::string section, size_t cap = 150);
  ~Reporter();
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  // Returns ok. `what` is only used when !ok.
  bool check(bool ok, const std::string& where, const std::string& what);
  // A failure that is about the test harness itself (fixture data it could not decode).
  void harness_failure(const std::string& where, const std::string& what);
  // Something deliberately not compared; listed in the tally.
  void note(const std::string& where, const std::string& what);

  size_t checks() const { return checks_; }
  size_t failures() const { return failures_; }

 private:
  std::string fixture_, section_;
  size_t cap_;
  size_t checks_ = 0, failures_ = 0, notes_ = 0;
};

// ---- comparisons ----

// Both JSON numbers (int or float) with equal value and the same kind (integer vs float), or both
// the same string ("NaN", "Infinity", "-Infinity"), or both bool / null and equal.
bool json_scalar_equal(const json& a, const json& b);
// A JSON number or non-finite string as a double (nullopt for anything else).
std::optional<double> json_double(const json& j);
bool same_nonfinite_or_close(double expected, double actual, double tol);

// Compares a value summary (fields of the fixture's `conventions`) with Vigil's summarize_value
// output. Reports per field. `where` names tensor and step.
void compare_summary(Reporter& rep, const std::string& where, const json& expected, const json& actual);

// Checks that `r` failed with exactly the fixture's exception {type, message}.
template <typename T>
bool expect_exception(Reporter& rep, const std::string& where, const vigil::Result<T>& r, const json& exc) {
  std::string type = exc.at("type").get<std::string>();
  std::string message = exc.at("message").get<std::string>();
  if (r.has_value()) {
    return rep.check(false, where, "expected exception " + type + ": \"" + message + "\" but the call succeeded");
  }
  bool ok = rep.check(std::string(r.error().class_name()) == type, where + " exception.type",
                      "expected " + type + ", got " + describe(r.error()));
  ok &= rep.check(r.error().message == message, where + " exception.message",
                  "expected \"" + message + "\", got \"" + r.error().message + "\"");
  return ok;
}

// ---- independent decoding of the fixture's raw records (test-only reference) ----

struct RawTensor {
  int32_t data_type = 0;  // TensorProto.dtype (TF DataType); 0 for strings
  std::vector<int64_t> shape;
  std::string content;                // tensor_content
  std::vector<std::string> strings;   // string_val
  std::string file;                   // event file, for messages
  uint64_t offset = 0;
  size_t size() const;                // product(shape)
  bool is_string() const { return data_type == 0; }
};

// Looks the tensor up in index/<step/1000>/<step>_<worker>.json (tensor_payload only) and decodes
// its TFRecord + Event/Summary/TensorProto by hand. nullopt (and `*error`) when there is no raw
// record for it or it cannot be decoded.
std::optional<RawTensor> read_raw_tensor(const std::filesystem::path& trial, const std::string& tensor,
                                         int64_t step, const std::string& worker, std::string* error);
// True when the index lists a shape_payload entry for it.
bool index_has_shape_entry(const std::filesystem::path& trial, const std::string& tensor, int64_t step,
                           const std::string& worker);

// numpy dtype name / array-interface typestr for a TF DataType Vigil should produce (int8 as int8).
std::optional<std::string> dtype_name_of(int32_t data_type);
std::optional<std::string> dtype_str_of(int32_t data_type);
bool is_integer_data_type(int32_t data_type);

// Element values in long double (float16 decoded by hand, int8 signed). Empty for strings.
std::vector<long double> raw_values(const RawTensor& raw);

// Statistics for tolerances: size, sum |x|, mean x^2 (all in long double, from the raw record).
struct RawStats {
  double size = 0, sum_abs = 0, mean_sq = 0;
};
RawStats raw_stats(const RawTensor& raw);

// The value summary an integer or bool raw tensor must have (same conventions as the fixture:
// numpy semantics on the correctly decoded dtype). nullopt for float/string/unsupported dtypes.
std::optional<json> reference_int_summary(const RawTensor& raw);

// A reduction as numpy would compute it on the correctly decoded value, with l1/l2 always
// element-wise (sum |x| and sqrt(sum x^2)). value is exact in long double, then rounded to the
// result dtype. nullopt for unsupported dtypes.
struct RefReduction {
  double value = 0;
  std::string dtype;
};
std::optional<RefReduction> reference_reduction(const RawTensor& raw, std::string_view op, bool abs);

// Tolerance for comparing a float reduction result of dtype `dtype` (float16/32/64) with an
// expected value: numpy computes in the tensor's own precision (pairwise float32 sums, float16
// sums of squares, subnormal squares of tiny values), Vigil may accumulate more precisely.
double reduction_tolerance(std::string_view op, std::string_view dtype, double expected, const RawStats& stats);
bool is_float_dtype(std::string_view dtype);
// Rounds a double to the nearest value of a float dtype ("float16", "float32", "float64").
double round_to_dtype(double v, std::string_view dtype);

}  // namespace conf
