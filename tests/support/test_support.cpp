// The non-template helpers of test_support.h.
#include "test_support.h"

#include <vigil/sdk/half.hpp>

#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <thread>

#include "plugin_host/profiles.h"

namespace vigil::test {

ScratchDir::ScratchDir(std::string_view prefix) {
  std::string pattern = (fs::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string read_file_if_present(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

size_t threads_named(std::string_view name) {
  size_t n = 0;
  std::error_code ec;
  for (fs::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) {
    std::string comm = read_file_if_present(it->path() / "comm");  // gone when the thread just ended
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    if (comm == name) ++n;
  }
  return n;
}

bool wait_for_threads_named(std::string_view name, size_t expected, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (threads_named(name) != expected) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::string from_hex(std::string_view hex) {
  std::string out;
  int high = -1;
  for (char c : hex) {
    const int lower = std::tolower(static_cast<unsigned char>(c));
    int v = -1;
    if (lower >= '0' && lower <= '9') v = lower - '0';
    if (lower >= 'a' && lower <= 'f') v = lower - 'a' + 10;
    if (v < 0) continue;
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<char>(high * 16 + v));
      high = -1;
    }
  }
  return out;
}

std::vector<std::string> list_files(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) out.push_back(fs::relative(it->path(), root).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::byte> tensor_bytes(const TensorSave& save) {
  using format::ElementType;
  std::vector<std::byte> out;
  auto append = [&out](const auto& v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  };
  for (double v : save.values) {
    switch (save.dtype) {
      case ElementType::Float32: append(static_cast<float>(v)); break;
      case ElementType::Float64: append(v); break;
      case ElementType::Float16: append(sdk::double_to_half(v)); break;
      case ElementType::Int64: append(static_cast<int64_t>(v)); break;
      case ElementType::Int32: append(static_cast<int32_t>(v)); break;
      case ElementType::Int16: append(static_cast<int16_t>(v)); break;
      case ElementType::UInt8: append(static_cast<uint8_t>(v)); break;
      case ElementType::Bool: append(static_cast<uint8_t>(v != 0)); break;
      default: ADD_FAILURE() << save.name << ": unsupported dtype in the test helper";
    }
  }
  return out;
}

void write_trial(const fs::path& dir, const std::vector<TrialStep>& steps, const WorkerOptions& trial) {
  using format::ElementType;
  writer::WriterOptions options;
  options.worker = trial.worker;
  options.num_workers = trial.num_workers;
  options.write_end_marker = trial.end_marker;
  options.builtin_collections = trial.builtin_collections;
  for (auto& m : options.save_config) m.save_interval = 1;
  auto w = writer::TrialWriter::create(dir, options);
  ASSERT_VIGIL_OK(w);
  for (const auto& c : trial.collections) ASSERT_VIGIL_OK((*w)->add_collection(c));
  for (const auto& s : steps) {
    ASSERT_VIGIL_OK((*w)->begin_step_at(s.step, s.mode, s.mode_step < 0 ? s.step : s.mode_step));
    for (const auto& save : s.saves) {
      const auto bytes = tensor_bytes(save);
      const bool is_string = save.dtype == ElementType::String;
      std::vector<int64_t> shape = save.shape;
      if (shape.empty()) shape = {static_cast<int64_t>(is_string ? save.strings.size() : save.values.size())};
      writer::TensorData data{.dtype = save.dtype, .shape = shape, .bytes = bytes, .strings = save.strings};
      ASSERT_VIGIL_OK((*w)->write_tensor(save.name, data)) << save.name;
    }
    for (const auto& red : s.reductions) {
      const std::vector<int64_t> scalar_shape{};
      writer::TensorData data{.dtype = ElementType::Float64,
                              .shape = scalar_shape,
                              .bytes = std::as_bytes(std::span<const double>(&red.value, 1))};
      ASSERT_VIGIL_OK((*w)->write_reduction(red.name, red.op, red.abs, data));
    }
    for (const auto& name : s.shape_only) {
      const std::vector<int64_t> shape{2};
      ASSERT_VIGIL_OK((*w)->write_shape(name, shape));
    }
    ASSERT_VIGIL_OK((*w)->end_step());
  }
  ASSERT_VIGIL_OK((*w)->close());
}

std::vector<TrialStep> range_steps(int64_t first, int64_t last, std::vector<int64_t> skip) {
  std::vector<TrialStep> out;
  for (int64_t s = first; s <= last; ++s)
    if (std::find(skip.begin(), skip.end(), s) == skip.end()) out.push_back({s});
  return out;
}

void write_worker(const fs::path& dir, const std::string& worker, int64_t num_workers, std::vector<TrialStep> steps,
                  bool end_marker) {
  for (auto& s : steps) {
    const auto g = static_cast<double>(s.step);
    s.saves.push_back(TensorSave{"w", {g, g + 0.5}, {2}});
  }
  write_trial(dir, steps, {.worker = worker, .num_workers = num_workers, .end_marker = end_marker});
}

const plugin_host::PluginRegistry& builtin_registry() {
  static const plugin_host::PluginRegistry registry = [] {
    plugin_host::PluginRegistry r;
    r.load_directory(VIGIL_BUILTIN_PLUGIN_DIR);
    return r;
  }();
  return registry;
}

std::map<std::string, std::string> calibrated_defaults(const vigil_rule_descriptor* descriptor) {
  std::map<std::string, std::string> out;
  for (const vigil_profile_default& d : plugin_host::profile_defaults(descriptor))
    if (std::string_view(d.profile) == VIGIL_PROFILE_CALIBRATED) out[d.param] = d.default_text;
  return out;
}

Result<evaluate::RuleStatus> try_evaluate_rule(const std::string& rule, const fs::path& trial,
                                               std::map<std::string, std::string> params,
                                               evaluate::EvaluatorOptions options, const std::string& name,
                                               const plugin_host::PluginRegistry& registry) {
  params["rule_to_invoke"] = rule;
  auto config = evaluate::rule_from_parameters(name.empty() ? rule : name, params, trial.string(), "test");
  if (!config) return fail(config.error());
  evaluate::JobConfig job;
  job.rules.push_back(*config);
  auto ev = evaluate::Evaluator::create(registry, job, std::move(options));
  if (!ev) return fail(ev.error());
  (*ev)->run({});
  return (*ev)->statuses().at(0);
}

evaluate::RuleStatus evaluate_rule(const std::string& rule, const fs::path& trial,
                                   std::map<std::string, std::string> params, evaluate::EvaluatorOptions options,
                                   const std::string& name) {
  EXPECT_NE(builtin_registry().find(rule), nullptr) << rule << " is not loaded from " << VIGIL_BUILTIN_PLUGIN_DIR;
  auto s = try_evaluate_rule(rule, trial, std::move(params), std::move(options), name);
  EXPECT_VIGIL_OK(s);
  return s ? *s : evaluate::RuleStatus{};
}

std::string rule_refusal(const std::string& rule, const fs::path& trial, std::map<std::string, std::string> params) {
  params["rule_to_invoke"] = rule;
  auto config = evaluate::rule_from_parameters(rule, params, trial.string(), "test");
  if (!config) return config.error().message;
  evaluate::JobConfig job;
  job.rules.push_back(*config);
  auto ev = evaluate::Evaluator::create(builtin_registry(), job, {});
  return ev ? std::string() : ev.error().message;
}

std::vector<int64_t> trigger_steps(const evaluate::RuleStatus& s) {
  std::vector<int64_t> out;
  for (const auto& t : s.triggers) out.push_back(t.step);
  return out;
}

std::string seen(const evaluate::RuleStatus& s) {
  std::string out = std::string(evaluate::status_name(s.status)) + " " + s.details + " triggers [";
  for (const auto& t : s.triggers) out += std::to_string(t.step) + " ";
  return out + "]";
}

const nlohmann::json& evidence(const evaluate::RuleStatus& s, size_t trigger) {
  static const nlohmann::json kNone = nlohmann::json::object();
  if (trigger >= s.triggers.size() || s.triggers[trigger].evidence.empty()) {
    ADD_FAILURE() << "no evidence for trigger " << trigger << ": " << seen(s);
    return kNone;
  }
  return s.triggers[trigger].evidence.front();
}

nlohmann::json evidence_at_step(const evaluate::RuleStatus& s, int64_t step) {
  for (const auto& t : s.triggers)
    if (t.step == step && !t.evidence.empty()) return t.evidence.front();
  ADD_FAILURE() << "no evidence at step " << step;
  return nlohmann::json::object();
}

}  // namespace vigil::test
