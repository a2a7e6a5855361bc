// Conformance of vigil::Trial with smdebug 1.0.34's read API, replayed from the real fixtures in
// shared/fixtures/smdebug-real/<name>/ and every answer smdebug gave in <name>.expected.json.
//
// One instance per fixture (listed at run time). All checks of a fixture share one Trial, like the
// single create_trial() object the answers come from. Mismatches are non-fatal and name the
// fixture, tensor, step and field.
//
// Where smdebug is wrong and Vigil deliberately differs (docs/compatibility.md), the RIGHT answer is
// asserted, computed from the fixture itself (its raw records, decoded here independently):
//  * DT_INT8 is read as int8, not uint8 (same bytes / sha256, signed values and statistics);
//  * DT_INT16 (KeyError in smdebug) is decoded as int16;
//  * tensor_names() for a mode or mode step never seen is an empty list, not a KeyError;
//  * computed l1/l2 are element-wise norms for every rank (numpy's matrix norms for 2-D values,
//    and its "Improper number of dimensions" / float16 errors, are replaced by sum|x|, sqrt(sum x^2));
//  * a shape entry never hides the raw value of the same tensor/step/worker (no fixture has one).
// The rules section of the fixtures is not replayed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "conformance_support.h"
#include "format/collections_json.h"
#include "trial/reductions.h"
#include "trial/tensor_value.h"
#include "trial/trial.h"
#include "trial/value_summary.h"

namespace {

using conf::json;
using conf::Reporter;
using vigil::Mode;

constexpr int32_t kDtInt8 = 6;
const char* const kModeNames[] = {"GLOBAL", "TRAIN", "EVAL", "PREDICT"};

std::string step_where(const std::string& tensor, int64_t step, std::string_view mode = "GLOBAL",
                       std::string_view worker = "") {
  std::string w = "tensor=" + tensor + " step=" + std::to_string(step);
  if (mode != "GLOBAL") w += " mode=" + std::string(mode);
  if (!worker.empty()) w += " worker=" + std::string(worker);
  return w;
}

// Vigil's summary as plain json (keys compared as a set).
std::optional<json> vigil_summary(Reporter& rep, const std::string& where, const vigil::TensorValue& v) {
  try {
    return json::parse(vigil::summarize_value(v).dump());
  } catch (const std::exception& e) {
    rep.check(false, where, std::string("summarize_value threw: ") + e.what());
    return std::nullopt;
  }
}

// The first element of a (saved reduction) value as a double.
std::optional<double> first_element(const vigil::TensorValue& v) {
  if (v.size() < 1 || v.is_string()) return std::nullopt;
  using ET = vigil::ElementType;
  switch (v.dtype()) {
    case ET::Float32: return v.as<float>()[0];
    case ET::Float64: return v.as<double>()[0];
    case ET::Float16: {
      uint16_t bits = v.as<uint16_t>()[0];
      _Float16 h;
      std::memcpy(&h, &bits, 2);
      return static_cast<double>(h);
    }
    case ET::Int8: return v.as<int8_t>()[0];
    case ET::Int16: return v.as<int16_t>()[0];
    case ET::Int32: return v.as<int32_t>()[0];
    case ET::Int64: return static_cast<double>(v.as<int64_t>()[0]);
    case ET::UInt8: return v.as<uint8_t>()[0];
    case ET::UInt16: return v.as<uint16_t>()[0];
    case ET::UInt32: return v.as<uint32_t>()[0];
    case ET::UInt64: return static_cast<double>(v.as<uint64_t>()[0]);
    case ET::Bool: return v.as<uint8_t>()[0] ? 1.0 : 0.0;
    default: return std::nullopt;
  }
}

// A ReductionValue as the 0-d array smdebug returns (numpy scalar / torch 0-d), for summarizing.
std::optional<vigil::TensorValue> reduction_as_value(const vigil::ReductionValue& r) {
  using ET = vigil::ElementType;
  std::byte buf[8] = {};
  size_t n = 0;
  auto put = [&](auto x) {
    std::memcpy(buf, &x, sizeof x);
    n = sizeof x;
  };
  switch (r.dtype) {
    case ET::Float32: put(static_cast<float>(r.value)); break;
    case ET::Float64: put(r.value); break;
    case ET::Float16: put(static_cast<_Float16>(r.value)); break;
    case ET::Int8: put(static_cast<int8_t>(r.value)); break;
    case ET::Int16: put(static_cast<int16_t>(r.value)); break;
    case ET::Int32: put(static_cast<int32_t>(r.value)); break;
    case ET::Int64: put(static_cast<int64_t>(r.value)); break;
    case ET::UInt8: put(static_cast<uint8_t>(r.value)); break;
    case ET::UInt16: put(static_cast<uint16_t>(r.value)); break;
    case ET::UInt32: put(static_cast<uint32_t>(r.value)); break;
    case ET::UInt64: put(static_cast<uint64_t>(r.value)); break;
    case ET::Bool: put(static_cast<uint8_t>(r.value != 0)); break;
    default: return std::nullopt;
  }
  return vigil::TensorValue::copy_of(r.dtype, {}, std::span<const std::byte>(buf, n));
}

std::string fmt(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    fixture_ = GetParam();
    exp_ = &conf::expected_json(fixture_);
    dir_ = conf::trial_dir(fixture_);
    auto t = conf::shared_trial(fixture_);
    ASSERT_TRUE(t.has_value()) << "[" << fixture_ << "] Trial::open(" << dir_ << ") failed: "
                               << conf::describe(t.error());
    trial_ = *t;
    for (const auto& w : (*exp_)["trial"]["workers"]) workers_.push_back(w.get<std::string>());
  }

  // The default worker smdebug picks (the smallest name), for raw look-ups.
  std::string default_worker() const { return workers_.empty() ? "worker_0" : workers_.front(); }

  // Global step of a (mode, mode step) from the fixture's own lookup table.
  std::optional<int64_t> fixture_global_step(const std::string& mode, int64_t step) const {
    if (mode == "GLOBAL") return step;
    for (const auto& g : (*exp_)["trial"]["global_step_lookup"])
      if (g["mode"] == mode && g["mode_step"] == step && g["global_step"].is_number()) return g["global_step"].get<int64_t>();
    return std::nullopt;
  }

  std::optional<conf::RawTensor> raw(const std::string& tensor, int64_t step, const std::string& worker,
                                     std::string* err = nullptr) const {
    return conf::read_raw_tensor(dir_, tensor, step, worker, err);
  }

  // Expected summary for a value smdebug returned: the fixture's, except for DT_INT8 records, whose
  // values Vigil reads signed (the fixture has smdebug's uint8 reading of the same bytes).
  json expected_value_summary(Reporter& rep, const std::string& where, const json& fixture_summary,
                              const std::optional<conf::RawTensor>& rec) const {
    if (!rec || rec->data_type != kDtInt8) return fixture_summary;
    auto ref = conf::reference_int_summary(*rec);
    if (!ref) {
      rep.harness_failure(where, "cannot build the int8 reference summary");
      return fixture_summary;
    }
    // Harness self-check: same bytes as smdebug's uint8 reading.
    if (fixture_summary.value("sha256", "") != (*ref)["sha256"])
      rep.harness_failure(where, "raw int8 record does not match the fixture's sha256");
    if (fixture_summary.contains("values") && ref->contains("values")) {
      const json& u = fixture_summary["values"];
      const json& s = (*ref)["values"];
      bool same = u.size() == s.size();
      for (size_t i = 0; same && i < u.size(); ++i) {
        int64_t uv = u[i].get<int64_t>();
        same = (uv >= 128 ? uv - 256 : uv) == s[i].get<int64_t>();
      }
      if (!same) rep.harness_failure(where, "fixture uint8 values do not reinterpret to the raw int8 values");
    }
    return *ref;
  }

  std::string fixture_;
  const json* exp_ = nullptr;
  std::filesystem::path dir_;
  std::shared_ptr<vigil::Trial> trial_;
  std::vector<std::string> workers_;
};

// ------------------------------------------------------------------------------------------------
// 1. Trial facts
// ------------------------------------------------------------------------------------------------

TEST_P(Conformance, TrialFacts) {
  Reporter rep(fixture_, "TrialFacts");
  const json& t = (*exp_)["trial"];

  rep.check(trial_->training_ended() == t["training_ended"].get<bool>(), "trial.training_ended",
            "expected " + t["training_ended"].dump());

  auto workers = trial_->workers();
  if (rep.check(workers.has_value(), "trial.workers()", workers ? "" : conf::describe(workers.error())))
    rep.check(*workers == conf::json_strings(t["workers"]), "trial.workers()",
              "expected " + conf::join(conf::json_strings(t["workers"])) + ", got " + conf::join(*workers));

  rep.check(trial_->num_workers() == t["num_workers"].get<int64_t>(), "trial.num_workers",
            "expected " + t["num_workers"].dump() + ", got " + std::to_string(trial_->num_workers()));

  for (bool incl : {false, true}) {
    const json& steps = t[incl ? "steps_incl_incomplete" : "steps"];
    for (const char* mn : kModeNames) {
      if (!steps.contains(mn)) continue;
      std::string w = std::string("trial.steps(mode=") + mn + (incl ? ", show_incomplete_steps=True)" : ")");
      auto r = trial_->steps(*conf::mode_from_name(mn), incl);
      if (!rep.check(r.has_value(), w, r ? "" : conf::describe(r.error()))) continue;
      auto e = conf::json_ints(steps[mn]);
      rep.check(*r == e, w, "expected " + conf::join(e) + ", got " + conf::join(*r));
    }
  }

  rep.check(trial_->loaded_all_steps() == t["loaded_all_steps"].get<bool>(), "trial.loaded_all_steps",
            "expected " + t["loaded_all_steps"].dump());
  rep.check(trial_->last_complete_step() == t["last_complete_step"].get<int64_t>(), "trial.last_complete_step",
            "expected " + t["last_complete_step"].dump() + ", got " + std::to_string(trial_->last_complete_step()));

  {
    std::vector<std::string> got;
    for (Mode m : trial_->modes()) got.push_back(conf::mode_str(m));
    std::sort(got.begin(), got.end());
    auto e = conf::json_strings(t["modes"]);
    std::sort(e.begin(), e.end());
    rep.check(got == e, "trial.modes()", "expected (as a set) " + conf::join(e) + ", got " + conf::join(got));
  }

  for (const auto& s : t["step_map"]) {
    int64_t g = s["global_step"].get<int64_t>();
    std::string w = "trial.mode_modestep(" + std::to_string(g) + ")";
    auto r = trial_->mode_modestep(g);
    const json& em = s["trial.mode"];
    const json& es = s["trial.mode_step"];
    if (em.is_null()) {
      rep.check(!r.has_value(), w, "expected (None, None)");
      continue;
    }
    if (!rep.check(r.has_value(), w, "expected (" + em.get<std::string>() + ", " + es.dump() + "), got None")) continue;
    rep.check(conf::mode_str(r->first) == em.get<std::string>() && r->second == es.get<int64_t>(), w,
              "expected (" + em.get<std::string>() + ", " + es.dump() + "), got (" + conf::mode_str(r->first) + ", " +
                  std::to_string(r->second) + ")");
  }

  for (const auto& s : t["global_step_lookup"]) {
    std::string mn = s["mode"].get<std::string>();
    int64_t ms = s["mode_step"].get<int64_t>();
    std::string w = "trial.global_step(" + mn + ", " + std::to_string(ms) + ")";
    auto m = conf::mode_from_name(mn);
    if (!rep.check(m.has_value(), w, "unknown mode name in fixture")) continue;
    auto r = trial_->global_step(*m, ms);
    if (s["global_step"].is_null()) {
      rep.check(!r.has_value(), w, "expected None, got " + (r ? std::to_string(*r) : std::string()));
    } else {
      rep.check(r.has_value() && *r == s["global_step"].get<int64_t>(), w,
                "expected " + s["global_step"].dump() + ", got " + (r ? std::to_string(*r) : std::string("None")));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// 1b. tensor_names
// ------------------------------------------------------------------------------------------------

TEST_P(Conformance, TensorNames) {
  Reporter rep(fixture_, "TensorNames");
  const json& tn = (*exp_)["trial"]["tensor_names"];

  auto run = [&](const vigil::TensorNameQuery& q, const json& expected, const std::string& w) {
    auto r = trial_->tensor_names(q);
    if (expected.is_object() && expected.contains("exception")) {
      const json& exc = expected["exception"];
      if (exc["type"] == "KeyError") {
        // smdebug raises a raw KeyError for a mode / mode step it never saw; Vigil answers [].
        if (rep.check(r.has_value(), w + " (smdebug: KeyError; Vigil: [])",
                      "expected an empty list, got " + (r ? std::string() : conf::describe(r.error()))))
          rep.check(r->empty(), w + " (smdebug: KeyError; Vigil: [])", "expected [], got " + conf::join(*r));
      } else {
        conf::expect_exception(rep, w, r, exc);
      }
      return;
    }
    auto e = conf::json_strings(expected);
    if (!rep.check(r.has_value(), w, "expected " + conf::join(e) + ", got " + (r ? "" : conf::describe(r.error()))))
      return;
    rep.check(*r == e, w, "expected " + conf::join(e) + ", got " + conf::join(*r));
  };

  run({}, tn["all"], "trial.tensor_names()");

  for (auto it = tn["by_mode"].begin(); it != tn["by_mode"].end(); ++it) {
    vigil::TensorNameQuery q;
    q.mode = *conf::mode_from_name(it.key());
    run(q, it.value(), "trial.tensor_names(mode=" + it.key() + ")");
  }
  for (auto it = tn["by_collection"].begin(); it != tn["by_collection"].end(); ++it) {
    vigil::TensorNameQuery q;
    q.collection = it.key();
    run(q, it.value(), "trial.tensor_names(collection='" + it.key() + "')");
  }
  for (auto it = tn["by_step"].begin(); it != tn["by_step"].end(); ++it) {
    vigil::TensorNameQuery q;
    q.step = std::stoll(it.key());
    run(q, it.value(), "trial.tensor_names(step=" + it.key() + ")");
  }
  std::set<std::string> modes_with_steps;
  for (auto mit = tn["by_mode_step"].begin(); mit != tn["by_mode_step"].end(); ++mit) {
    modes_with_steps.insert(mit.key());
    Mode m = *conf::mode_from_name(mit.key());
    if (mit.value().is_object() && mit.value().contains("exception")) {
      vigil::TensorNameQuery q;
      q.mode = m;
      q.step = 0;
      run(q, mit.value(), "trial.tensor_names(mode=" + mit.key() + ", step=0)");
      continue;
    }
    for (auto it = mit.value().begin(); it != mit.value().end(); ++it) {
      vigil::TensorNameQuery q;
      q.mode = m;
      q.step = std::stoll(it.key());
      run(q, it.value(), "trial.tensor_names(mode=" + mit.key() + ", step=" + it.key() + ")");
    }
  }
  for (auto it = tn["by_regex"].begin(); it != tn["by_regex"].end(); ++it) {
    vigil::TensorNameQuery q;
    q.regex = {it.key()};
    run(q, it.value(), "trial.tensor_names(regex='" + it.key() + "')");
  }

  // Vigil's answer where smdebug raises KeyError (unseen mode, unknown mode step / global step): [].
  const json key_error = {{"exception", {{"type", "KeyError"}, {"message", "(unknown)"}}}};
  for (const char* mn : {"TRAIN", "EVAL", "PREDICT"}) {
    vigil::TensorNameQuery q;
    q.mode = *conf::mode_from_name(mn);
    q.step = modes_with_steps.count(mn) ? 1000000 : 0;
    run(q, key_error, std::string("trial.tensor_names(mode=") + mn + ", step=" + std::to_string(*q.step) + ")");
  }
  {
    vigil::TensorNameQuery q;
    q.step = 1000000;
    run(q, key_error, "trial.tensor_names(step=1000000)");
  }
}

// ------------------------------------------------------------------------------------------------
// 1c. collections
// ------------------------------------------------------------------------------------------------

TEST_P(Conformance, Collections) {
  Reporter rep(fixture_, "Collections");
  const json& ec = (*exp_)["trial"]["collections"];
  const auto& got = trial_->collections();

  std::map<std::string, const vigil::format::CollectionConfig*> by_name;
  for (const auto& c : got) by_name[c.name] = &c;
  {
    std::vector<std::string> e, g;
    for (auto it = ec.begin(); it != ec.end(); ++it) e.push_back(it.key());
    for (const auto& [n, c] : by_name) g.push_back(n);
    std::sort(e.begin(), e.end());
    rep.check(e == g && got.size() == by_name.size(), "trial.collections() names",
              "expected " + conf::join(e) + ", got " + conf::join(g));
  }

  const char* const save_modes[] = {"TRAIN", "EVAL", "PREDICT", "GLOBAL"};  // CollectionConfig::save_config order
  for (auto it = ec.begin(); it != ec.end(); ++it) {
    const std::string& name = it.key();
    const json& e = it.value();
    std::string w = "collection '" + name + "'";
    auto f = by_name.find(name);
    if (f == by_name.end()) continue;  // already reported
    const auto& c = *f->second;
    rep.check(trial_->collection(name) != nullptr && trial_->collection(name)->name == name,
              "trial.collection('" + name + "')", "not found");
    rep.check(c.name == e["name"].get<std::string>(), w + ".name", "expected " + e["name"].dump() + ", got " + c.name);
    rep.check(c.include_regex == conf::json_strings(e["include_regex"]), w + ".include_regex",
              "expected " + e["include_regex"].dump() + ", got " + conf::join(c.include_regex));
    rep.check(c.tensor_names == conf::json_strings(e["tensor_names"]), w + ".tensor_names",
              "expected " + e["tensor_names"].dump() + ", got " + conf::join(c.tensor_names));
    rep.check(c.save_histogram == e["save_histogram"].get<bool>(), w + ".save_histogram",
              "expected " + e["save_histogram"].dump());

    const json& rc = e["reduction_config"];
    if (rc.is_null()) {
      rep.check(!c.reduction_config.has_value(), w + ".reduction_config", "expected null");
    } else if (rep.check(c.reduction_config.has_value(), w + ".reduction_config", "expected " + rc.dump() + ", got null")) {
      rep.check(c.reduction_config->save_raw_tensor == rc["save_raw_tensor"].get<bool>(),
                w + ".reduction_config.save_raw_tensor", "expected " + rc["save_raw_tensor"].dump());
      rep.check(c.reduction_config->save_shape == rc["save_shape"].get<bool>(), w + ".reduction_config.save_shape",
                "expected " + rc["save_shape"].dump());
      auto parsed = vigil::format::parse_reduction_list(rc["reductions"].get<std::string>());
      if (rep.check(parsed.has_value(), w + ".reduction_config.reductions",
                    "parse_reduction_list rejected the fixture's " + rc["reductions"].dump())) {
        std::string got_list = vigil::format::format_reduction_list(c.reduction_config->reductions);
        rep.check(*parsed == c.reduction_config->reductions, w + ".reduction_config.reductions",
                  "expected " + rc["reductions"].dump() + ", got \"" + got_list + "\"");
      }
    }

    const json& sc = e["save_config"];
    if (sc.is_null()) {
      rep.check(!c.save_config.has_value(), w + ".save_config", "expected null");
      continue;
    }
    if (!rep.check(c.save_config.has_value(), w + ".save_config", "expected " + sc.dump() + ", got null")) continue;
    for (size_t i = 0; i < 4; ++i) {
      std::string wm = w + ".save_config." + save_modes[i];
      const auto& g = (*c.save_config)[i];
      if (!sc.contains(save_modes[i]) || sc[save_modes[i]].is_null()) {
        rep.check(!g.has_value(), wm, "expected null");
        continue;
      }
      const json& em = sc[save_modes[i]];
      if (!rep.check(g.has_value(), wm, "expected " + em.dump() + ", got null")) continue;
      rep.check(g->save_interval == em["save_interval"].get<int64_t>(), wm + ".save_interval",
                "expected " + em["save_interval"].dump() + ", got " + std::to_string(g->save_interval));
      rep.check(g->save_steps == conf::json_ints(em["save_steps"]), wm + ".save_steps",
                "expected " + em["save_steps"].dump() + ", got " + conf::join(g->save_steps));
      rep.check(g->start_step == em["start_step"].get<int64_t>(), wm + ".start_step",
                "expected " + em["start_step"].dump() + ", got " + std::to_string(g->start_step));
      if (em["end_step"].is_null())
        rep.check(!g->end_step.has_value(), wm + ".end_step", "expected null, got " + std::to_string(g->end_step.value_or(0)));
      else
        rep.check(g->end_step == em["end_step"].get<int64_t>(), wm + ".end_step", "expected " + em["end_step"].dump());
    }
  }
}

// ------------------------------------------------------------------------------------------------
// 2. per tensor: steps, values, shapes, saved reductions
// ------------------------------------------------------------------------------------------------

TEST_P(Conformance, TensorEntries) {
  Reporter rep(fixture_, "TensorEntries", 200);
  const json& tensors = (*exp_)["tensors"];

  for (auto tit = tensors.begin(); tit != tensors.end(); ++tit) {
    const std::string& tname = tit.key();
    const json& tj = tit.value();
    SCOPED_TRACE("tensor " + tname);
    std::string tw = "tensor=" + tname;

    rep.check(trial_->has_tensor(tname), tw + " has_tensor", "expected True");
    auto th = trial_->tensor(tname);
    rep.check(th.has_value() && th->name() == tname, tw + " trial.tensor()",
              th ? "wrong name " + th->name() : conf::describe(th.error()));

    for (bool incl : {false, true}) {
      const json& steps = tj[incl ? "steps_incl_incomplete" : "steps"];
      for (const char* mn : kModeNames) {
        if (!steps.contains(mn)) continue;
        std::string w = tw + " steps(mode=" + mn + (incl ? ", show_incomplete_steps=True)" : ")");
        auto r = trial_->tensor_steps(tname, *conf::mode_from_name(mn), incl);
        if (!rep.check(r.has_value(), w, r ? "" : conf::describe(r.error()))) continue;
        auto e = conf::json_ints(steps[mn]);
        rep.check(*r == e, w, "expected " + conf::join(e) + ", got " + conf::join(*r));
      }
    }

    for (const auto& e : tj["entries"]) {
      int64_t step = e["step"].get<int64_t>();
      std::string worker = e["worker"].get<std::string>();
      std::string mode_name = e["mode"].get<std::string>();
      int64_t mode_step = e["mode_step"].get<int64_t>();
      std::string w = step_where(tname, step, "GLOBAL", worker);
      std::string raw_err;
      auto rec = raw(tname, step, worker, &raw_err);

      // ---- value
      auto val = trial_->value(tname, step, Mode::Global, worker);
      if (e.contains("value")) {
        json expected = expected_value_summary(rep, w + " value", e["value"], rec);
        if (rep.check(val.has_value(), w + " value()",
                      "expected a value, got " + (val ? std::string() : conf::describe(val.error())))) {
          if (auto s = vigil_summary(rep, w + " value()", *val)) compare_summary(rep, w + " value()", expected, *s);
          // The same record through its mode step.
          auto m = conf::mode_from_name(mode_name);
          auto v2 = trial_->value(tname, mode_step, *m, worker);
          std::string w2 = step_where(tname, mode_step, mode_name, worker) + " value() sha256";
          if (rep.check(v2.has_value(), w2, v2 ? "" : conf::describe(v2.error()))) {
            auto s2 = vigil_summary(rep, w2, *v2);
            if (s2) rep.check((*s2)["sha256"] == expected["sha256"], w2, "expected " + expected["sha256"].dump() +
                                                                          ", got " + (*s2)["sha256"].dump());
          }
        }
      } else if (e.contains("value_exception")) {
        const json& exc = e["value_exception"];
        if (exc["type"] == "KeyError") {
          // smdebug cannot map this DataType (e.g. DT_INT16 -> KeyError: 5); Vigil decodes it.
          std::string wk = w + " value() (smdebug: KeyError " + exc["message"].get<std::string>() + ")";
          if (!rec) {
            rep.harness_failure(wk, "cannot decode the raw record: " + raw_err);
          } else if (rep.check(val.has_value(), wk,
                               "expected Vigil to decode it, got " + (val ? std::string() : conf::describe(val.error())))) {
            auto ref = conf::reference_int_summary(*rec);
            auto s = vigil_summary(rep, wk, *val);
            if (ref && s) {
              compare_summary(rep, wk, *ref, *s);
              // self-consistency of the summary
              if (s->contains("min") && s->contains("max") && s->contains("mean")) {
                auto mn = conf::json_double((*s)["min"]), mx = conf::json_double((*s)["max"]),
                     me = conf::json_double((*s)["mean"]);
                rep.check(mn && mx && me && *mn <= *me && *me <= *mx, wk + " min<=mean<=max", "got " + s->dump());
              }
              rep.check(s->value("sha256", "").size() == 64, wk + " sha256", "expected 64 hex characters");
            } else if (s) {
              auto dn = conf::dtype_name_of(rec->data_type);
              rep.check(dn && (*s)["dtype"] == *dn, wk + " dtype", "expected " + dn.value_or("?") + ", got " + s->dump());
            }
          }
        } else if (exc["type"] == "TensorUnavailableForStep" && rec &&
                   conf::index_has_shape_entry(dir_, tname, step, worker)) {
          // smdebug quirk (§3.11): the shape entry hid the raw value. Vigil returns the raw value.
          std::string ws = w + " value() (shape entry hid the raw value in smdebug)";
          if (rep.check(val.has_value(), ws, val ? "" : conf::describe(val.error()))) {
            rep.check(std::string_view(reinterpret_cast<const char*>(val->bytes().data()), val->bytes().size()) ==
                          rec->content,
                      ws, "bytes differ from the raw record");
          }
        } else {
          conf::expect_exception(rep, w + " value()", val, exc);
        }
      }

      // ---- shape
      auto shp = trial_->shape(tname, step, Mode::Global, worker);
      if (e.contains("shape")) {
        auto es = conf::json_ints(e["shape"]);
        if (rep.check(shp.has_value(), w + " shape()",
                      "expected " + conf::join(es) + ", got " + (shp ? std::string() : conf::describe(shp.error()))))
          rep.check(*shp == es, w + " shape()", "expected " + conf::join(es) + ", got " + conf::join(*shp));
      } else if (e.contains("shape_exception")) {
        const json& exc = e["shape_exception"];
        if (exc["type"] == "KeyError") {
          std::string wk = w + " shape() (smdebug: KeyError)";
          if (!rec) {
            rep.harness_failure(wk, "cannot decode the raw record: " + raw_err);
          } else if (rep.check(shp.has_value(), wk, "expected " + conf::join(rec->shape) + ", got " +
                                                        (shp ? std::string() : conf::describe(shp.error())))) {
            rep.check(*shp == rec->shape, wk, "expected the record's shape " + conf::join(rec->shape) + ", got " +
                                                  conf::join(*shp));
          }
        } else {
          conf::expect_exception(rep, w + " shape()", shp, exc);
        }
      }
      if (val && shp) rep.check(val->shape() == *shp, w + " value().shape == shape()",
                                conf::join(val->shape()) + " vs " + conf::join(*shp));

      // ---- saved reductions
      const json esr = e.contains("saved_reductions") ? e["saved_reductions"] : json::array();
      auto srs = trial_->reduction_values(tname, step, Mode::Global, worker);
      if (rep.check(srs.has_value(), w + " reduction_values()", srs ? "" : conf::describe(srs.error()))) {
        std::map<std::string, const vigil::SavedReduction*> got;
        for (const auto& sr : *srs)
          got[std::string(vigil::reduction_name(sr.op)) + (sr.abs ? "/abs" : "")] = &sr;
        std::vector<std::string> ek, gk;
        for (const auto& r : esr) ek.push_back(r["name"].get<std::string>() + (r["abs"].get<bool>() ? "/abs" : ""));
        for (const auto& [k, p] : got) gk.push_back(k);
        std::sort(ek.begin(), ek.end());
        rep.check(ek == gk && got.size() == srs->size(), w + " reduction_values() keys",
                  "expected " + conf::join(ek) + ", got " + conf::join(gk));
        for (const auto& r : esr) {
          std::string key = r["name"].get<std::string>() + (r["abs"].get<bool>() ? "/abs" : "");
          std::string wr = w + " saved reduction " + key;
          auto f = got.find(key);
          if (f == got.end()) continue;
          const auto& tv = f->second->value;
          rep.check(conf::numpy_name(tv.dtype()) == r["dtype"].get<std::string>(), wr + " dtype",
                    "expected " + r["dtype"].dump() + ", got " + conf::numpy_name(tv.dtype()));
          if (r.contains("shape"))
            rep.check(tv.shape() == conf::json_ints(r["shape"]), wr + " shape",
                      "expected " + r["shape"].dump() + ", got " + conf::join(tv.shape()));
          auto ev = conf::json_double(r["value"]);
          auto gv = first_element(tv);
          rep.check(ev && gv && conf::same_nonfinite_or_close(*ev, *gv, 0.0), wr + " value",
                    "expected " + r["value"].dump() + ", got " + (gv ? fmt(*gv) : std::string("none")));
          // reduction_value() prefers the saved reduction.
          auto rv = trial_->reduction_value(tname, step, r["name"].get<std::string>(), r["abs"].get<bool>(),
                                            Mode::Global, worker);
          if (rep.check(rv.has_value(), wr + " reduction_value()", rv ? "" : conf::describe(rv.error()))) {
            rep.check(rv->saved, wr + " reduction_value().saved", "expected the saved reduction, got a computed one");
            rep.check(ev && conf::same_nonfinite_or_close(*ev, rv->value, 0.0), wr + " reduction_value()",
                      "expected " + r["value"].dump() + ", got " + fmt(rv->value));
            rep.check(conf::numpy_name(rv->dtype) == r["dtype"].get<std::string>(), wr + " reduction_value().dtype",
                      "expected " + r["dtype"].dump() + ", got " + conf::numpy_name(rv->dtype));
          }
        }
      }

      // ---- workers and mode of the step
      auto tws = trial_->tensor_workers(tname, step, Mode::Global);
      if (rep.check(tws.has_value(), w + " workers()", tws ? "" : conf::describe(tws.error())))
        rep.check(std::find(tws->begin(), tws->end(), worker) != tws->end(), w + " workers()",
                  "expected to contain " + worker + ", got " + conf::join(*tws));
      auto mm = trial_->mode_modestep(step);
      rep.check(mm && conf::mode_str(mm->first) == mode_name && mm->second == mode_step, w + " mode_modestep",
                "expected (" + mode_name + ", " + std::to_string(mode_step) + ")");
    }
  }
}

// ------------------------------------------------------------------------------------------------
// 2b. computed reductions (reduction_value on the raw value; saved ones where the fixture says so)
// ------------------------------------------------------------------------------------------------

TEST_P(Conformance, ComputedReductions) {
  Reporter rep(fixture_, "ComputedReductions", 200);
  const json& tensors = (*exp_)["tensors"];

  for (auto tit = tensors.begin(); tit != tensors.end(); ++tit) {
    const std::string& tname = tit.key();
    const json& tj = tit.value();
    if (tj["computed_reductions"].empty()) continue;
    SCOPED_TRACE("tensor " + tname);

    // Entry summaries by (step, worker), for fallback tolerance scales.
    std::map<std::pair<int64_t, std::string>, const json*> entries;
    for (const auto& e : tj["entries"]) entries[{e["step"].get<int64_t>(), e["worker"].get<std::string>()}] = &e;
    std::map<std::pair<int64_t, std::string>, std::optional<conf::RawTensor>> raws;
    // smdebug's own (abs=False) mean and variance per (step, worker), for the harness cross-check.
    std::map<std::tuple<int64_t, std::string, std::string>, double> numpy_stat;
    for (const auto& cr : tj["computed_reductions"]) {
      if (cr["abs"].get<bool>() || !cr.contains("value")) continue;
      if (auto v = conf::json_double(cr["value"]))
        numpy_stat[{cr["step"].get<int64_t>(), cr["worker"].get<std::string>(), cr["name"].get<std::string>()}] = *v;
    }

    for (const auto& cr : tj["computed_reductions"]) {
      int64_t step = cr["step"].get<int64_t>();
      std::string worker = cr["worker"].get<std::string>();
      std::string op = cr["name"].get<std::string>();
      bool abs = cr["abs"].get<bool>();
      std::string source = cr.value("source", "computed");
      std::string w = step_where(tname, step, "GLOBAL", worker) + " reduction=" + (abs ? "abs_" : "") + op;

      auto key = std::make_pair(step, worker);
      if (!raws.count(key)) {
        std::string err;
        raws[key] = raw(tname, step, worker, &err);
        if (!raws[key] && source == "computed") rep.harness_failure(w, "cannot decode the raw record: " + err);
      }
      const auto& rec = raws[key];

      conf::RawStats stats;
      if (rec) {
        stats = conf::raw_stats(*rec);
      } else if (auto f = entries.find(key); f != entries.end() && (*f->second).contains("value")) {
        const json& s = (*f->second)["value"];
        stats.size = s.value("size", 1.0);
        double ma = s.contains("mean_abs") ? conf::json_double(s["mean_abs"]).value_or(0) : 0;
        double mx = 0;
        for (const char* k : {"min", "max"})
          if (s.contains(k)) mx = std::max(mx, std::fabs(conf::json_double(s[k]).value_or(0)));
        stats.sum_abs = (ma ? ma : mx) * stats.size;
        stats.mean_sq = mx * mx;
      }

      auto rv = trial_->reduction_value(tname, step, op, abs, Mode::Global, worker);

      bool is_int8 = rec && rec->data_type == kDtInt8;
      bool norm = op == "l1" || op == "l2";
      bool elementwise = norm && source == "computed" && rec && (rec->shape.size() != 1 || cr.contains("exception"));

      double expected = 0;
      std::string dtype;
      double tol = 0;
      std::string label;
      if (is_int8 || elementwise) {
        auto ref = conf::reference_reduction(*rec, op, abs);
        if (!ref) {
          rep.harness_failure(w, "no reference reduction for DataType " + std::to_string(rec->data_type));
          continue;
        }
        expected = ref->value;
        dtype = ref->dtype;
        tol = conf::reduction_tolerance(op, dtype, expected, stats);
        if (is_int8) {
          label = " (int8 read signed; smdebug: " + (cr.contains("value") ? cr["value"].dump() + " " + cr.value("dtype", "")
                                                                         : cr["exception"].dump()) + ")";
        } else {
          label = " (element-wise over rank " + std::to_string(rec->shape.size()) + "; smdebug: " +
                  (cr.contains("value") ? cr["value"].dump() : cr["exception"]["type"].get<std::string>() + " " +
                                                                  cr["exception"]["message"].get<std::string>()) + ")";
          if (cr.contains("dtype") && cr["dtype"] != dtype)
            rep.note(w, "smdebug's matrix-norm dtype " + cr["dtype"].dump() + " differs from the element-wise " + dtype);
          // Harness cross-check against the fixture's own statistics: l1 = mean_abs * size,
          // l2 = sqrt(size * (variance + mean^2)), where those are finite (numpy's float16
          // variance can overflow). Loose: the fixture's variance is numpy's own-precision result.
          std::optional<double> derived;
          double n = static_cast<double>(rec->size());
          if (auto f = entries.find(key); op == "l1" && f != entries.end() && (*f->second).contains("value") &&
                                          (*f->second)["value"].contains("mean_abs")) {
            derived = conf::json_double((*f->second)["value"]["mean_abs"]).value_or(NAN) * n;
          } else if (op == "l2") {
            auto v = numpy_stat.find({step, worker, "variance"});
            auto m = numpy_stat.find({step, worker, "mean"});
            if (v != numpy_stat.end() && m != numpy_stat.end())
              derived = std::sqrt(n * (v->second + m->second * m->second));
          }
          if (derived && std::isfinite(*derived) && std::isfinite(expected)) {
            double loose = (dtype == "float16" ? 2e-2 : 1e-3) * std::fabs(expected) + 1e-30;
            if (std::fabs(*derived - expected) > loose)
              rep.harness_failure(w, "element-wise reference " + fmt(expected) + " disagrees with the fixture-derived " +
                                         fmt(*derived));
            else
              rep.check(true, w + " (harness cross-check)", "");
          }
        }
      } else if (cr.contains("exception")) {
        conf::expect_exception(rep, w, rv, cr["exception"]);
        continue;
      } else {
        auto ev = conf::json_double(cr["value"]);
        if (!ev) {
          rep.harness_failure(w, "unreadable fixture value " + cr["value"].dump());
          continue;
        }
        expected = *ev;
        dtype = cr["dtype"].get<std::string>();
        tol = source == "saved" ? 0.0 : conf::reduction_tolerance(op, dtype, expected, stats);
        if (!std::isfinite(expected) && rec) {
          // numpy's float16 std/variance overflow in their float16 intermediates even where the
          // result fits; Vigil returns the exact value rounded to float16 (docs/compatibility.md).
          if (auto ref = conf::reference_reduction(*rec, op, abs); ref && std::isfinite(ref->value)) {
            label = " (smdebug: " + fmt(expected) + " from numpy's " + dtype + " intermediate overflow)";
            expected = ref->value;
            tol = conf::reduction_tolerance(op, ref->dtype, expected, stats);
          }
        }
      }

      if (!rep.check(rv.has_value(), w + label,
                     "expected " + fmt(expected) + " " + dtype + ", got " + (rv ? std::string() : conf::describe(rv.error()))))
        continue;
      rep.check(conf::numpy_name(rv->dtype) == dtype, w + " dtype" + label,
                "expected " + dtype + ", got " + conf::numpy_name(rv->dtype));
      rep.check(rv->saved == (source == "saved"), w + " saved" + label,
                std::string("expected ") + (source == "saved" ? "the saved reduction" : "a computed value"));
      rep.check(conf::same_nonfinite_or_close(expected, rv->value, tol), w + label,
                "expected " + fmt(expected) + ", got " + fmt(rv->value) +
                    (std::isfinite(expected) ? " (|diff| " + fmt(std::fabs(expected - rv->value)) + ", tolerance " +
                                                   fmt(tol) + ")"
                                             : std::string()));
    }
  }
}

// ------------------------------------------------------------------------------------------------
// 3. probes
// ------------------------------------------------------------------------------------------------

std::string quoted_arg(const std::string& call) {
  auto a = call.find("('");
  auto b = call.find("')", a == std::string::npos ? 0 : a + 2);
  if (a == std::string::npos || b == std::string::npos) return {};
  return call.substr(a + 2, b - a - 2);
}

TEST_P(Conformance, Probes) {
  Reporter rep(fixture_, "Probes");

  for (const auto& p : (*exp_)["probes"]) {
    std::string api = p["api"].get<std::string>();
    std::string w = "probe " + p["call"].get<std::string>();
    const json* exc = p.contains("exception") ? &p["exception"] : nullptr;
    const json* res = p.contains("result") ? &p["result"] : nullptr;
    if (!exc && !res) {
      rep.harness_failure(w, "probe has neither result nor exception");
      continue;
    }
    std::string mode_name = p.contains("mode") ? p["mode"].get<std::string>() : "GLOBAL";
    Mode mode = conf::mode_from_name(mode_name).value_or(Mode::Global);
    int64_t step = p.contains("step") ? p["step"].get<int64_t>() : 0;
    std::optional<std::string> worker;
    if (p.contains("worker") && p["worker"].is_string()) worker = p["worker"].get<std::string>();
    std::string tname = p.contains("tensor") ? p["tensor"].get<std::string>() : quoted_arg(p["call"].get<std::string>());
    auto probe_raw = [&]() -> std::optional<conf::RawTensor> {
      auto g = fixture_global_step(mode_name, step);
      if (!g) return std::nullopt;
      return raw(tname, *g, worker.value_or(default_worker()));
    };

    if (api == "tensor") {
      auto r = trial_->tensor(tname);
      if (exc) conf::expect_exception(rep, w, r, *exc);
      else rep.check(r.has_value(), w, r ? "" : conf::describe(r.error()));
    } else if (api == "has_tensor") {
      bool r = trial_->has_tensor(tname);
      rep.check(res && res->is_boolean() && r == res->get<bool>(), w, "expected " + (res ? res->dump() : "?"));
    } else if (api == "value") {
      auto r = trial_->value(tname, step, mode, worker);
      if (res) {
        auto rec = probe_raw();
        json expected = expected_value_summary(rep, w, *res, rec);
        if (rep.check(r.has_value(), w, "expected a value, got " + (r ? std::string() : conf::describe(r.error()))))
          if (auto s = vigil_summary(rep, w, *r)) compare_summary(rep, w, expected, *s);
      } else if ((*exc)["type"] == "KeyError") {
        std::string wk = w + " (smdebug: KeyError " + (*exc)["message"].get<std::string>() + ")";
        auto rec = probe_raw();
        if (!rec) {
          rep.harness_failure(wk, "cannot decode the raw record");
        } else if (rep.check(r.has_value(), wk, "expected Vigil to decode it, got " +
                                                    (r ? std::string() : conf::describe(r.error())))) {
          auto ref = conf::reference_int_summary(*rec);
          auto s = vigil_summary(rep, wk, *r);
          if (ref && s) compare_summary(rep, wk, *ref, *s);
        }
      } else {
        conf::expect_exception(rep, w, r, *exc);
      }
    } else if (api == "reduction_value") {
      std::string op = p["reduction"].get<std::string>();
      bool abs = p.value("abs", false);
      auto r = trial_->reduction_value(tname, step, op, abs, mode, worker);
      auto rec = probe_raw();
      bool key_error = exc && (*exc)["type"] == "KeyError";
      bool int8 = res && rec && rec->data_type == kDtInt8;
      if (key_error || int8) {
        std::string wk = w + (key_error ? " (smdebug: KeyError " + (*exc)["message"].get<std::string>() + ")"
                                        : std::string(" (int8 read signed)"));
        if (!rec) {
          rep.harness_failure(wk, "cannot decode the raw record");
          continue;
        }
        auto ref = conf::reference_reduction(*rec, op, abs);
        if (!ref) {
          rep.harness_failure(wk, "no reference reduction");
          continue;
        }
        if (rep.check(r.has_value(), wk, "expected " + fmt(ref->value) + " " + ref->dtype + ", got " +
                                             (r ? std::string() : conf::describe(r.error())))) {
          double tol = conf::reduction_tolerance(op, ref->dtype, ref->value, conf::raw_stats(*rec));
          rep.check(conf::numpy_name(r->dtype) == ref->dtype, wk + " dtype",
                    "expected " + ref->dtype + ", got " + conf::numpy_name(r->dtype));
          rep.check(conf::same_nonfinite_or_close(ref->value, r->value, tol), wk,
                    "expected " + fmt(ref->value) + ", got " + fmt(r->value) + " (tolerance " + fmt(tol) + ")");
        }
      } else if (res) {
        if (rep.check(r.has_value(), w, "expected a value, got " + (r ? std::string() : conf::describe(r.error())))) {
          auto tv = reduction_as_value(*r);
          if (rep.check(tv.has_value(), w, "unrepresentable result dtype " + conf::numpy_name(r->dtype)))
            if (auto s = vigil_summary(rep, w, *tv)) compare_summary(rep, w + " (as a 0-d array)", *res, *s);
        }
      } else {
        conf::expect_exception(rep, w, r, *exc);
      }
    } else if (api == "shape") {
      auto r = trial_->shape(tname, step, mode);
      if (res) {
        auto e = conf::json_ints(*res);
        if (rep.check(r.has_value(), w, "expected " + res->dump() + ", got " + (r ? std::string() : conf::describe(r.error()))))
          rep.check(*r == e, w, "expected " + res->dump() + ", got " + conf::join(*r));
      } else if ((*exc)["type"] == "KeyError") {
        auto rec = probe_raw();
        if (rep.check(r.has_value() && rec.has_value(), w + " (smdebug: KeyError)",
                      r ? "raw record missing" : conf::describe(r.error())))
          rep.check(*r == rec->shape, w + " (smdebug: KeyError)", "expected " + conf::join(rec->shape));
      } else {
        conf::expect_exception(rep, w, r, *exc);
      }
    } else if (api == "workers") {
      auto r = trial_->tensor_workers(tname, step, mode);
      if (res) {
        auto e = conf::json_strings(*res);
        if (rep.check(r.has_value(), w, "expected " + res->dump() + ", got " + (r ? std::string() : conf::describe(r.error()))))
          rep.check(*r == e, w, "expected " + res->dump() + ", got " + conf::join(*r));
      } else {
        conf::expect_exception(rep, w, r, *exc);
      }
    } else if (api == "has_passed_step") {
      auto r = trial_->has_passed_step(step, mode);
      if (res) {
        if (rep.check(r.has_value(), w, "expected " + res->dump() + ", got " + (r ? std::string() : conf::describe(r.error()))))
          rep.check(conf::state_str(*r) == res->get<std::string>(), w,
                    "expected " + res->get<std::string>() + ", got " + conf::state_str(*r));
      } else {
        conf::expect_exception(rep, w, r, *exc);
      }
    } else if (api == "mode_modestep") {
      auto r = trial_->mode_modestep(step);
      if (!res || !res->is_array() || res->size() != 2) {
        rep.harness_failure(w, "unexpected result shape");
        continue;
      }
      if ((*res)[0].is_null()) {
        rep.check(!r.has_value(), w, "expected (None, None), got (" + (r ? conf::mode_str(r->first) + ", " +
                                                                               std::to_string(r->second) : "") + ")");
      } else {
        rep.check(r && conf::mode_str(r->first) == (*res)[0].get<std::string>() && r->second == (*res)[1].get<int64_t>(),
                  w, "expected " + res->dump());
      }
    } else if (api == "global_step") {
      auto r = trial_->global_step(mode, step);
      if (!res || res->is_null()) {
        rep.check(!r.has_value(), w, "expected None, got " + (r ? std::to_string(*r) : ""));
      } else {
        rep.check(r && *r == res->get<int64_t>(), w, "expected " + res->dump() + ", got " + (r ? std::to_string(*r) : "None"));
      }
    } else {
      rep.note(w, "probe api '" + api + "' not replayed");
    }
  }
}

std::string fixture_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(SmdebugReal, Conformance, ::testing::ValuesIn(conf::list_fixtures()), fixture_test_name);

// The same facts on the fixtures written again by Vigil's writer, record by record.
std::vector<std::string> rewritten_fixtures() {
  std::vector<std::string> out;
  for (const auto& f : conf::list_fixtures()) out.push_back(f + std::string(conf::kRewrittenSuffix));
  return out;
}
INSTANTIATE_TEST_SUITE_P(VigilWriter, Conformance, ::testing::ValuesIn(rewritten_fixtures()), fixture_test_name);

TEST(ConformanceFixtures, RequiredFixturesPresent) {
  auto names = conf::list_fixtures();
  for (const char* required : {"loss_not_decreasing", "mixed_dtypes", "mlp_healthy", "vanishing_gradient"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end())
        << "fixture " << required << " not found under " << conf::fixtures_root();
  }
}

}  // namespace
