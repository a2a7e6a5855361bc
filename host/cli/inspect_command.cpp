// `vigil inspect`: a human summary of a trial, or a JSON dump (schema in docs/inspect.md).
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "trial/trial.h"
#include "trial/value_summary.h"

namespace vigil::cli {
namespace {

constexpr std::string_view kInspectUsage = R"(usage: vigil inspect TRIAL [--json] [--values] [--tensor NAME] [--step N] [--wait SECONDS]

Summarises an smdebug trial: workers, steps per mode, tensors per collection. TRIAL is a folder
or s3://bucket/prefix (credentials, region and endpoint from the AWS_* variables and ~/.aws files,
as AWS tools find them: docs/object-storage.md).

options:
  --json          print a machine-readable dump of the whole trial (schema: docs/inspect.md)
  --values        with --json: add each value's summary (dtype, shape, sha256, sum, min, max, ...)
                  and the saved reductions; without --json: print value summaries in the listing
  --tensor NAME   only this tensor (repeatable)
  --step N        only this global step
  --wait SECONDS  wait this long for the trial's collection files to appear (default 0)
  -h, --help      show this help
)";

struct InspectOptions {
  std::string trial;
  bool json = false;
  bool values = false;
  std::vector<std::string> tensors;
  std::optional<int64_t> step;
  double wait_seconds = 0;
};

template <typename T>
bool parse_number(const std::string& s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

nlohmann::ordered_json error_json(const Error& e) {
  return {{"type", e.class_name()}, {"message", e.message}};
}

int report(const Error& e) {
  std::fprintf(stderr, "vigil inspect: %s: %s\n", std::string(e.class_name()).c_str(), e.message.c_str());
  return kExitFailure;
}

nlohmann::ordered_json steps_per_mode(Trial& trial, bool incomplete) {
  nlohmann::ordered_json out;
  for (Mode m : {Mode::Global, Mode::Train, Mode::Eval, Mode::Predict}) {
    auto s = trial.steps(m, incomplete);
    out[std::string(mode_name(m))] = s ? nlohmann::ordered_json(*s) : nlohmann::ordered_json{{"exception", error_json(s.error())}};
  }
  return out;
}

bool wanted(const InspectOptions& o, const std::string& name) {
  return o.tensors.empty() || std::find(o.tensors.begin(), o.tensors.end(), name) != o.tensors.end();
}

nlohmann::ordered_json tensor_json(Trial& trial, const std::string& name, const InspectOptions& o) {
  nlohmann::ordered_json t;
  Tensor tensor(trial.shared_from_this(), name);
  nlohmann::ordered_json steps, steps_incl;
  for (Mode m : {Mode::Global, Mode::Train, Mode::Eval, Mode::Predict}) {
    auto s = tensor.steps(m, false);
    steps[std::string(mode_name(m))] = s ? nlohmann::ordered_json(*s) : nlohmann::ordered_json{{"exception", error_json(s.error())}};
    auto si = tensor.steps(m, true);
    steps_incl[std::string(mode_name(m))] = si ? nlohmann::ordered_json(*si) : nlohmann::ordered_json{{"exception", error_json(si.error())}};
  }
  t["steps"] = steps;
  t["steps_incl_incomplete"] = steps_incl;
  auto entries = nlohmann::ordered_json::array();
  auto global_steps = tensor.steps(Mode::Global, true);
  for (int64_t step : global_steps.value_or(std::vector<int64_t>{})) {
    if (o.step && *o.step != step) continue;
    auto workers = tensor.workers(step);
    auto mm = trial.mode_modestep(step);
    for (const auto& w : workers.value_or(std::vector<std::string>{})) {
      nlohmann::ordered_json e;
      e["step"] = step;
      e["mode"] = mm ? mode_name(mm->first) : "GLOBAL";
      e["mode_step"] = mm ? mm->second : step;
      e["worker"] = w;
      if (o.values) {
        auto v = tensor.value(step, Mode::Global, w);
        if (v) e["value"] = summarize_value(*v);
        else e["value_exception"] = error_json(v.error());
      }
      auto shape = tensor.shape(step, Mode::Global, w);
      if (shape) e["shape"] = *shape;
      else e["shape_exception"] = error_json(shape.error());
      if (o.values) {
        auto saved = tensor.reduction_values(step, Mode::Global, w);
        if (saved && !saved->empty()) {
          auto list = nlohmann::ordered_json::array();
          for (const auto& r : *saved) {
            double x = 0;
            auto summary = summarize_value(r.value);
            list.push_back({{"name", reduction_name(r.op)},
                            {"abs", r.abs},
                            {"value", summary.contains("values") && !summary["values"].empty() ? summary["values"][0] : nlohmann::ordered_json(x)},
                            {"dtype", summary["dtype"]},
                            {"shape", r.value.shape()}});
          }
          e["saved_reductions"] = list;
        } else if (!saved) {
          e["saved_reductions_exception"] = error_json(saved.error());
        }
      }
      entries.push_back(std::move(e));
    }
  }
  t["entries"] = entries;
  return t;
}

int inspect_json(Trial& trial, const InspectOptions& o) {
  nlohmann::ordered_json out;
  out["trial"] = trial.path().string();
  out["name"] = trial.name();
  auto names = trial.tensor_names();
  if (!names) return report(names.error());
  out["training_ended"] = trial.training_ended();
  auto workers = trial.workers();
  if (!workers) return report(workers.error());
  out["workers"] = *workers;
  out["num_workers"] = trial.num_workers();
  out["steps"] = steps_per_mode(trial, false);
  out["steps_incl_incomplete"] = steps_per_mode(trial, true);
  out["loaded_all_steps"] = trial.loaded_all_steps();
  out["last_complete_step"] = trial.last_complete_step();
  auto modes = nlohmann::ordered_json::array();
  for (Mode m : trial.modes()) modes.push_back(mode_name(m));
  out["modes"] = modes;
  auto step_map = nlohmann::ordered_json::array();
  for (int64_t g : trial.steps(Mode::Global, true).value_or(std::vector<int64_t>{})) {
    auto mm = trial.mode_modestep(g);
    if (mm) step_map.push_back({{"global_step", g}, {"mode", mode_name(mm->first)}, {"mode_step", mm->second}});
  }
  out["step_map"] = step_map;
  nlohmann::ordered_json collections = nlohmann::ordered_json::object();
  for (const auto& c : trial.collections()) {
    auto members = trial.tensor_names(TensorNameQuery{.collection = c.name});
    collections[c.name] = {{"include_regex", c.include_regex},
                           {"tensor_names", members ? nlohmann::ordered_json(*members)
                                                    : nlohmann::ordered_json{{"exception", error_json(members.error())}}}};
  }
  out["collections"] = collections;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  for (const auto& name : *names)
    if (wanted(o, name)) tensors[name] = tensor_json(trial, name, o);
  out["tensors"] = tensors;
  std::cout << out.dump(2) << '\n';
  return kExitOk;
}

std::string steps_line(const std::vector<int64_t>& s) {
  if (s.empty()) return "none";
  return fmt::format("{} step{} ({}..{})", s.size(), s.size() == 1 ? "" : "s", s.front(), s.back());
}

int inspect_text(Trial& trial, const InspectOptions& o) {
  auto names = trial.tensor_names();
  if (!names) return report(names.error());
  auto workers = trial.workers();
  if (!workers) return report(workers.error());
  std::cout << "trial:    " << trial.path().string() << '\n';
  std::cout << "workers:  " << fmt::format("{}", fmt::join(*workers, ", ")) << " (num_workers " << trial.num_workers()
            << ")\n";
  std::cout << "training: " << (trial.training_ended() ? "ended" : "in progress (no end marker yet)")
            << ", last complete step " << trial.last_complete_step() << '\n';
  std::cout << "steps:\n";
  for (Mode m : {Mode::Global, Mode::Train, Mode::Eval, Mode::Predict}) {
    auto s = trial.steps(m);
    if (s) std::cout << fmt::format("  {:<8} {}\n", mode_name(m), steps_line(*s));
  }
  std::cout << "collections:\n";
  for (const auto& c : trial.collections()) {
    auto members = trial.tensor_names(TensorNameQuery{.collection = c.name});
    std::cout << fmt::format("  {:<20} {} tensor{}\n", c.name, members ? members->size() : 0,
                             members && members->size() == 1 ? "" : "s");
  }
  std::cout << "tensors (" << names->size() << "):\n";
  for (const auto& name : *names) {
    if (!wanted(o, name)) continue;
    Tensor tensor(trial.shared_from_this(), name);
    auto steps = tensor.steps();
    std::cout << fmt::format("  {:<40} {}\n", name, steps ? steps_line(*steps) : std::string(steps.error().message));
    if (!o.values && !o.step) continue;
    for (int64_t step : steps.value_or(std::vector<int64_t>{})) {
      if (o.step && *o.step != step) continue;
      auto v = tensor.value(step);
      if (v) {
        auto s = summarize_value(*v);
        s.erase("values");
        std::cout << fmt::format("    step {:<8} {}\n", step, s.dump());
      } else {
        std::cout << fmt::format("    step {:<8} {}: {}\n", step, v.error().class_name(), v.error().message);
      }
    }
  }
  return kExitOk;
}

}  // namespace

int run_inspect(const std::vector<std::string>& args) {
  InspectOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto need_value = [&](const char* flag) -> const std::string* {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "vigil inspect: %s needs a value\n", flag);
        return nullptr;
      }
      return &args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kInspectUsage.data(), stdout);
      return kExitOk;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--values") {
      o.values = true;
    } else if (a == "--tensor") {
      auto v = need_value("--tensor");
      if (!v) return kExitUsage;
      o.tensors.push_back(*v);
    } else if (a == "--step") {
      auto v = need_value("--step");
      int64_t step = 0;
      if (!v || !parse_number(*v, step)) {
        std::fprintf(stderr, "vigil inspect: --step needs an integer\n");
        return kExitUsage;
      }
      o.step = step;
    } else if (a == "--wait") {
      auto v = need_value("--wait");
      if (!v) return kExitUsage;
      try {
        o.wait_seconds = std::stod(*v);
      } catch (...) {
        std::fprintf(stderr, "vigil inspect: --wait needs a number of seconds\n");
        return kExitUsage;
      }
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "vigil inspect: unknown option '%s'\n\n%s", a.c_str(), kInspectUsage.data());
      return kExitUsage;
    } else if (o.trial.empty()) {
      o.trial = a;
    } else {
      std::fprintf(stderr, "vigil inspect: one TRIAL only ('%s' is extra)\n", a.c_str());
      return kExitUsage;
    }
  }
  if (o.trial.empty()) {
    std::fputs(kInspectUsage.data(), stderr);
    return kExitUsage;
  }
  TrialOptions topts = trial_options_from_env();
  topts.collections_timeout = std::chrono::milliseconds(int64_t(o.wait_seconds * 1000));
  auto trial = Trial::open(o.trial, topts);
  if (!trial) return report(trial.error());
  return o.json ? inspect_json(**trial, o) : inspect_text(**trial, o);
}

}  // namespace vigil::cli
