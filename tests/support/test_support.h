// The one helper header of the GoogleTest suites (namespace vigil::test, not vigil::testing, which
// would shadow GoogleTest's ::testing inside namespace vigil): scratch folders, small file helpers,
// trials written with Vigil's writer, built-in rules run through the evaluator, and assertions on
// Result<T> values. Linked as the vigil_test_support library (tests/support/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "evaluate/evaluator.h"
#include "plugin_host/plugin_loader.h"
#include "writer/trial_writer.h"

namespace vigil::test {

namespace fs = std::filesystem;

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- Result<T> assertions --------------------------------------------------------------------

// The text of an error value: Error's message, or the error itself where it is a string.
template <typename E>
std::string error_text(const E& e) {
  if constexpr (requires { e.message; }) return std::string(e.message);
  else return std::string(e);
}

}  // namespace vigil::test

// ASSERT_VIGIL_OK(expr) / EXPECT_VIGIL_OK(expr): `expr` (a Result<T> or any std::expected) holds a
// value; on failure the message names the expression and prints the error's message. The expression
// is evaluated once; a temporary lives until the check is done. More text can be streamed after it.
#define VIGIL_TEST_CHECK_OK_(expr, on_failure)                                                     \
  GTEST_AMBIGUOUS_ELSE_BLOCKER_                                                                    \
  if (const auto& vigil_test_result_ = (expr); vigil_test_result_.has_value()) {                   \
  } else                                                                                           \
    on_failure << #expr << " failed: " << ::vigil::test::error_text(vigil_test_result_.error()) << " "
#define ASSERT_VIGIL_OK(expr) VIGIL_TEST_CHECK_OK_(expr, FAIL())
#define EXPECT_VIGIL_OK(expr) VIGIL_TEST_CHECK_OK_(expr, ADD_FAILURE())

namespace vigil::test {

// ---- scratch folders and files -----------------------------------------------------------------

// A fresh folder (mkdtemp) under the system temp dir, removed with everything in it at destruction.
class ScratchDir {
 public:
  explicit ScratchDir(std::string_view prefix = "vigil-test");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(std::string_view rel) const { return path_ / rel; }

 private:
  fs::path path_;
};

// The whole file; a test failure where it cannot be opened.
std::string read_file(const fs::path& path);
// The whole file, or "" where it cannot be read, without a failure (files that may vanish).
std::string read_file_if_present(const fs::path& path);
// "4600 0000 ..." (whitespace and other non-hex characters ignored, either case) -> bytes.
std::string from_hex(std::string_view hex);
// Every regular file under `root` (relative, generic separators), sorted; a folder that vanishes
// while it is listed ends the listing instead of throwing.
std::vector<std::string> list_files(const fs::path& root);

// ---- threads -------------------------------------------------------------------------------------

// How many threads of this process are named `name` now (/proc/self/task/*/comm; common/os.h's
// name_this_thread), and the wait, up to `timeout`, until that count is `expected`: a thread names
// itself once it runs, and is gone once joined.
size_t threads_named(std::string_view name);
bool wait_for_threads_named(std::string_view name, size_t expected, std::chrono::milliseconds timeout);

// ---- the shared fixtures (read in place, never copied into the project) ---------------------------
// Only where the suite defines VIGIL_SHARED_DIR (the shared/ folder of the checkout).
#ifdef VIGIL_SHARED_DIR
inline fs::path shared_dir() { return fs::path(VIGIL_SHARED_DIR); }
inline fs::path real_fixtures() { return shared_dir() / "fixtures" / "smdebug-real"; }
inline fs::path pathology_fixtures() { return shared_dir() / "fixtures" / "pathologies"; }
#endif

// Every regular file under `root` whose path (relative to root, '/'-separated) satisfies `keep`,
// sorted so that test output is stable; none when `root` does not exist.
template <typename Keep>
std::vector<fs::path> files_under(const fs::path& root, Keep keep) {
  std::vector<fs::path> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    if (keep(fs::relative(e.path(), root).generic_string())) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Whether the relative path `rel` passes through a folder named `dir`.
inline bool has_component(const std::string& rel, const std::string& dir) {
  return rel.starts_with(dir + "/") || rel.find("/" + dir + "/") != std::string::npos;
}

// ---- tensor data for the writer ---------------------------------------------------------------

// TensorData viewing `values` (which must outlive it).
template <typename T>
writer::TensorData numeric(format::ElementType type, std::vector<int64_t> shape, const std::vector<T>& values) {
  return writer::TensorData{type, std::move(shape), std::as_bytes(std::span(values)), {}};
}
inline writer::TensorData float_data(const std::vector<float>& values, std::vector<int64_t> shape) {
  return numeric(format::ElementType::Float32, std::move(shape), values);
}
inline writer::TensorData strings(const std::vector<std::string>& values) {
  return writer::TensorData{format::ElementType::String, {static_cast<int64_t>(values.size())}, {}, values};
}


// ---- trials written with Vigil's writer ---------------------------------------------------------

// One tensor to save: `values` are converted to `dtype` (Float16 as binary16 bits; Bool as 0/1);
// String tensors take `strings` instead.
struct TensorSave {
  std::string name;
  std::vector<double> values;
  std::vector<int64_t> shape;  // empty: 1-d of values.size() (of strings.size() for String)
  format::ElementType dtype = format::ElementType::Float32;
  std::vector<std::string> strings;
};

// A saved reduction (a float64 scalar) of a tensor.
struct ReductionSave {
  std::string name;
  std::string op;
  bool abs = false;
  double value = 0;
};

struct TrialStep {
  int64_t step;  // the global step
  Mode mode = Mode::Train;
  int64_t mode_step = -1;  // -1: the global step
  std::vector<TensorSave> saves;
  std::vector<ReductionSave> reductions;
  std::vector<std::string> shape_only;  // tensors saved with their shape [2] only
};

struct WorkerOptions {
  std::string worker = "worker_0";
  int64_t num_workers = 1;
  bool end_marker = true;  // false where another worker of the trial writes it last
  std::vector<format::CollectionConfig> collections;  // added before the first step
  bool builtin_collections = true;
};

// The bytes `save` is written with.
std::vector<std::byte> tensor_bytes(const TensorSave& save);

// Writes one worker's steps with Vigil's writer (every step saved), then closes it. Fails the test
// (fatally, in this function) on any writer error.
void write_trial(const fs::path& dir, const std::vector<TrialStep>& steps, const WorkerOptions& options = {});

// Steps first..last without `skip`, each holding nothing yet (write_worker fills them).
std::vector<TrialStep> range_steps(int64_t first, int64_t last, std::vector<int64_t> skip = {});
// write_trial with the float32 tensor "w" = [step, step + 0.5] in every step: the scenario tests'
// trial, where only which steps exist matters.
void write_worker(const fs::path& dir, const std::string& worker, int64_t num_workers, std::vector<TrialStep> steps,
                  bool end_marker);

// ---- built-in rules through the evaluator -------------------------------------------------------

// The built-in plugins (VIGIL_BUILTIN_PLUGIN_DIR of the build), loaded once per process.
const plugin_host::PluginRegistry& builtin_registry();

// A descriptor's defaults in the calibrated profile (ABI 1.2 profile_defaults): parameter -> text.
std::map<std::string, std::string> calibrated_defaults(const vigil_rule_descriptor* descriptor);

// Runs one rule (`rule_to_invoke` = rule) on `trial` through the evaluator with `registry` and
// returns its status, or the refusal of the configuration. `name` is the configuration's name
// (the rule's when empty).
Result<evaluate::RuleStatus> try_evaluate_rule(const std::string& rule, const fs::path& trial,
                                               std::map<std::string, std::string> params = {},
                                               evaluate::EvaluatorOptions options = {}, const std::string& name = {},
                                               const plugin_host::PluginRegistry& registry = builtin_registry());
// try_evaluate_rule with the built-in rules, where the rule must be loaded and the configuration
// accepted (test failures otherwise, and an empty status).
evaluate::RuleStatus evaluate_rule(const std::string& rule, const fs::path& trial,
                                   std::map<std::string, std::string> params = {},
                                   evaluate::EvaluatorOptions options = {}, const std::string& name = {});
// The evaluator's refusal of a configuration (bad parameter values), or "" when it accepts it.
std::string rule_refusal(const std::string& rule, const fs::path& trial, std::map<std::string, std::string> params);

// The trigger steps, in order.
std::vector<int64_t> trigger_steps(const evaluate::RuleStatus& s);
// "<status> <details> triggers [s1 s2 ]": what the rule saw, for failure messages.
std::string seen(const evaluate::RuleStatus& s);
// The first evidence object of trigger number `trigger` (a failure and {} when there is none).
const nlohmann::json& evidence(const evaluate::RuleStatus& s, size_t trigger);
// The first evidence object reported at `step` (a failure and {} when there is none).
nlohmann::json evidence_at_step(const evaluate::RuleStatus& s, int64_t step);

}  // namespace vigil::test
