// Round trip through the Trial API: two workers write TRAIN and EVAL steps with every dtype,
// reductions, shapes-only saves, scalars and several collections; the trial must read back every
// value bit for bit with the right steps, modes, mode steps, workers and collections.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "format/trial_layout.h"
#include "trial/reductions.h"
#include "trial/tensor_value.h"
#include "trial/trial.h"
#include "test_support.h"

namespace vigil::writer {
namespace {

namespace fs = std::filesystem;
using test::ScratchDir;

struct Saved {
  ElementType type;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
  std::vector<std::string> strings;
  TensorData data() const { return {type, shape, bytes, strings}; }
};

uint64_t count_of(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

// Arbitrary bit patterns (NaNs with payloads included) that depend on the seed.
Saved random_tensor(ElementType type, std::vector<int64_t> shape, uint32_t seed) {
  Saved s{type, std::move(shape), {}, {}};
  const size_t n = count_of(s.shape) * format::element_type_info(type).item_size;
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    uint8_t b = static_cast<uint8_t>(x >> 16);
    s.bytes.push_back(static_cast<std::byte>(type == ElementType::Bool ? (b & 1) : b));
  }
  return s;
}

template <typename T>
Saved typed(ElementType type, std::vector<int64_t> shape, const std::vector<T>& values) {
  Saved s{type, std::move(shape), {}, {}};
  auto bytes = std::as_bytes(std::span(values));
  s.bytes.assign(bytes.begin(), bytes.end());
  return s;
}

struct DtypeCase {
  std::string name;
  ElementType type;
  std::vector<int64_t> shape;
};
const std::vector<DtypeCase> kDtypes{
    {"dt_f16", ElementType::Float16, {2, 3}},   {"dt_bf16", ElementType::BFloat16, {4}},
    {"dt_f32", ElementType::Float32, {2, 2, 2}}, {"dt_f64", ElementType::Float64, {3}},
    {"dt_i8", ElementType::Int8, {5}},          {"dt_i16", ElementType::Int16, {5}},
    {"dt_i32", ElementType::Int32, {2, 2}},      {"dt_i64", ElementType::Int64, {3}},
    {"dt_u8", ElementType::UInt8, {7}},          {"dt_u16", ElementType::UInt16, {3}},
    {"dt_u32", ElementType::UInt32, {3}},        {"dt_u64", ElementType::UInt64, {2}},
    {"dt_bool", ElementType::Bool, {6}},         {"dt_c64", ElementType::Complex64, {2}},
    {"dt_c128", ElementType::Complex128, {2}},   {"dt_0d_f32", ElementType::Float32, {}},
    {"dt_0d_i64", ElementType::Int64, {}},       {"dt_0d_bool", ElementType::Bool, {}},
    {"dt_one_f64", ElementType::Float64, {1}},   {"dt_one_i32", ElementType::Int32, {1}},
};

const std::vector<format::ReductionSpec> kReductions{
    {"min", false}, {"max", false}, {"mean", false}, {"std", false}, {"variance", false}, {"sum", false},
    {"prod", false}, {"l1", false}, {"l2", false}, {"min", true}, {"max", true}, {"mean", true}, {"l2", true},
};

// Tensors with meaningful values for the reductions; they depend on the step and the worker.
std::map<std::string, Saved> reduced_tensors(int64_t g, int worker) {
  const float f = static_cast<float>(g + 10 * worker);
  const uint16_t k = static_cast<uint16_t>(g + 3 * worker);
  std::map<std::string, Saved> out;
  out["red_f32"] = typed(ElementType::Float32, {2, 3}, std::vector<float>{1.5f + f, -2, 3.25f, -0.5f * f, 8, 0.125f});
  out["red_f16"] = typed(ElementType::Float16, {4}, std::vector<uint16_t>{0x3c00, uint16_t(0x3555 + k), 0xc100, 0x4700});
  out["red_bf16"] = typed(ElementType::BFloat16, {3}, std::vector<uint16_t>{0x3f80, uint16_t(0x4040 + k), 0xbf00});
  out["red_i32"] = typed(ElementType::Int32, {5}, std::vector<int32_t>{3, -7, 2 + int32_t(g), 10, -1 - worker});
  out["red_u8"] = typed(ElementType::UInt8, {4}, std::vector<uint8_t>{1, 2, uint8_t(250 - g), 3});
  return out;
}

struct Key {
  int worker;
  int64_t step;
  std::string name;
  auto operator<=>(const Key&) const = default;
};

std::string worker_name(int w) { return "worker_" + std::to_string(w); }

class WriterRoundTrip : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 2;
  // The step plan: TRAIN 0-2, EVAL 3-4 (4 saves only a shape), TRAIN 5.
  static constexpr Mode kPlan[] = {Mode::Train, Mode::Train, Mode::Train, Mode::Eval, Mode::Eval, Mode::Train};
  static constexpr int64_t kShapesOnlyStep = 4;

  void SetUp() override {
    // All workers start before any finishes: the first close() writes the end marker (spec §1.5).
    std::vector<std::unique_ptr<TrialWriter>> writers;
    for (int w = 0; w < kWorkers; ++w) {
      WriterOptions options;
      options.worker = worker_name(w);
      options.num_workers = kWorkers;
      for (auto& sc : options.save_config) sc.save_interval = 1;
      auto writer = TrialWriter::create(dir_.path(), options);
      ASSERT_VIGIL_OK(writer);
      writers.push_back(std::move(*writer));
    }
    for (int w = 0; w < kWorkers; ++w) write_worker(w, *writers[w]);
    auto trial = Trial::open(dir_.path());
    ASSERT_VIGIL_OK(trial);
    trial_ = *trial;
  }

  void write_worker(int w, TrialWriter& tw) {

    auto add = [&](std::string name, std::string regex, std::optional<format::ReductionConfig> rc) {
      format::CollectionConfig c;
      c.name = std::move(name);
      c.include_regex = {std::move(regex)};
      c.reduction_config = std::move(rc);
      ASSERT_TRUE(tw.add_collection(std::move(c)));
    };
    add("dtypes", "^dt_", std::nullopt);
    add("reduced", "^red_", format::ReductionConfig{.save_raw_tensor = true, .reductions = kReductions, .save_shape = false});
    add("shapes", "^shp_", format::ReductionConfig{.save_raw_tensor = false, .reductions = {}, .save_shape = true});
    add("gradients", "^gradient", std::nullopt);

    for (int64_t g = 0; g < static_cast<int64_t>(std::size(kPlan)); ++g) {
      ASSERT_TRUE(tw.begin_step(kPlan[g]));
      ASSERT_EQ(tw.global_step(), g);
      auto save = [&](const std::string& name, Saved s, std::span<const std::string> colls = {}) {
        ASSERT_TRUE(tw.save_tensor(name, s.data(), colls)) << name;
        expected_.emplace(Key{w, g, name}, std::move(s));
      };
      const Saved shape_only = random_tensor(ElementType::Float32, {3, 4}, 7);
      ASSERT_TRUE(tw.save_tensor("shp_w", shape_only.data()));
      if (g == kShapesOnlyStep) continue;

      uint32_t seed = static_cast<uint32_t>(1000 * w + 31 * g);
      for (const auto& d : kDtypes) save(d.name, random_tensor(d.type, d.shape, ++seed));
      Saved str{ElementType::String, {3}, {}, {"h\xc3\xa9llo", "", "step " + std::to_string(g)}};
      save("dt_str", str);
      for (auto& [name, s] : reduced_tensors(g, w)) save(name, s);
      // Never saved in EVAL (spec §6.1).
      if (kPlan[g] == Mode::Train) save("gradient/w", random_tensor(ElementType::Float32, {2}, ++seed));
      else ASSERT_FALSE(tw.should_save("gradient/w"));
      save("loose", random_tensor(ElementType::Float64, {2}, ++seed));  // no collection: "default"
      const std::vector<std::string> mine{"mine"};
      save("custom", random_tensor(ElementType::Int16, {2}, ++seed), mine);
      const double lr = 0.5 + static_cast<double>(g) + w;
      ASSERT_TRUE(tw.save_scalar("lr", lr));
      expected_.emplace(Key{w, g, "scalar/lr"}, typed(ElementType::Float64, {1}, std::vector<double>{lr}));
    }
    ASSERT_TRUE(tw.close());
  }

  ScratchDir dir_;
  std::shared_ptr<Trial> trial_;
  std::map<Key, Saved> expected_;
};

TEST_F(WriterRoundTrip, StepsModesAndWorkers) {
  Trial& t = *trial_;
  EXPECT_EQ(t.workers().value(), (std::vector<std::string>{"worker_0", "worker_1"}));
  EXPECT_EQ(t.num_workers(), 2);
  EXPECT_EQ(t.steps().value(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(t.steps(Mode::Train).value(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(t.steps(Mode::Eval).value(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(t.mode_modestep(3), std::make_pair(Mode::Eval, int64_t{0}));
  EXPECT_EQ(t.mode_modestep(5), std::make_pair(Mode::Train, int64_t{3}));
  EXPECT_EQ(t.global_step(Mode::Eval, 1), 4);
  EXPECT_EQ(t.global_step(Mode::Train, 3), 5);
  EXPECT_TRUE(t.training_ended());
  EXPECT_EQ(t.tensor_steps("gradient/w").value(), (std::vector<int64_t>{0, 1, 2, 5}));
  EXPECT_EQ(t.tensor_steps("dt_f32").value(), (std::vector<int64_t>{0, 1, 2, 3, 5}));
  EXPECT_EQ(t.tensor_workers("dt_f32", 3).value().size(), 2u);

  // The shapes-only step has an index but no event file.
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_TRUE(fs::exists(dir_ / format::index_file_relpath(kShapesOnlyStep, worker_name(w))));
    EXPECT_FALSE(fs::exists(dir_ / format::event_file_relpath(kShapesOnlyStep, worker_name(w))));
  }

  auto names = t.tensor_names().value();
  for (const auto& n : names) EXPECT_FALSE(n.starts_with("smdebug/reductions/")) << n;
  for (const auto& [key, saved] : expected_)
    EXPECT_TRUE(std::ranges::find(names, key.name) != names.end()) << key.name;
  EXPECT_TRUE(std::ranges::find(names, "shp_w") != names.end());
}

TEST_F(WriterRoundTrip, EveryValueBitForBit) {
  Trial& t = *trial_;
  ASSERT_FALSE(expected_.empty());
  for (const auto& [key, saved] : expected_) {
    SCOPED_TRACE(key.name + " step " + std::to_string(key.step) + " " + worker_name(key.worker));
    auto v = t.value(key.name, key.step, Mode::Global, worker_name(key.worker));
    ASSERT_VIGIL_OK(v);
    EXPECT_EQ(v->dtype(), saved.type);
    EXPECT_EQ(v->shape(), saved.shape);
    if (saved.type == ElementType::String) {
      EXPECT_EQ(v->string_values(), saved.strings);
    } else {
      ASSERT_EQ(v->bytes().size(), saved.bytes.size());
      EXPECT_EQ(std::memcmp(v->bytes().data(), saved.bytes.data(), saved.bytes.size()), 0);
    }
    // The same value addressed by (mode, mode step).
    auto [mode, mode_step] = t.mode_modestep(key.step).value();
    auto by_mode = t.value(key.name, mode_step, mode, worker_name(key.worker));
    ASSERT_VIGIL_OK(by_mode);
    EXPECT_TRUE(std::ranges::equal(by_mode->bytes(), v->bytes()));
  }
}

TEST_F(WriterRoundTrip, SavedReductionsAndShapes) {
  Trial& t = *trial_;
  int checked = 0;
  for (const auto& [key, saved] : expected_) {
    if (!key.name.starts_with("red_")) continue;
    SCOPED_TRACE(key.name + " step " + std::to_string(key.step) + " " + worker_name(key.worker));
    const std::string worker = worker_name(key.worker);
    auto all = t.reduction_values(key.name, key.step, Mode::Global, worker);
    ASSERT_VIGIL_OK(all);
    EXPECT_EQ(all->size(), kReductions.size());
    for (const auto& saved_red : *all) EXPECT_TRUE(saved_red.value.shape().empty());  // 0-d, like torch's

    const TensorValue input = TensorValue::copy_of(saved.type, saved.shape, saved.bytes);
    for (const auto& r : kReductions) {
      SCOPED_TRACE(std::string(r.abs ? "abs_" : "") + r.op);
      auto want = compute_reduction(input, *parse_reduction_name(r.op), r.abs);
      ASSERT_VIGIL_OK(want);
      auto got = t.reduction_value(key.name, key.step, r.op, r.abs, Mode::Global, worker);
      ASSERT_VIGIL_OK(got);
      EXPECT_TRUE(got->saved);
      EXPECT_EQ(got->dtype, want->dtype);
      if (std::isnan(want->value)) {
        EXPECT_TRUE(std::isnan(got->value));
      } else {
        EXPECT_EQ(got->value, want->value);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, kWorkers * 5 * 5 * static_cast<int>(kReductions.size()));

  for (int w = 0; w < kWorkers; ++w) {
    for (int64_t g = 0; g < 6; ++g) {
      auto shape = t.shape("shp_w", g, Mode::Global, worker_name(w));
      ASSERT_VIGIL_OK(shape);
      EXPECT_EQ(*shape, (std::vector<int64_t>{3, 4}));
      EXPECT_FALSE(t.value("shp_w", g, Mode::Global, worker_name(w)));  // shapes only: no raw value
    }
  }
}

TEST_F(WriterRoundTrip, Collections) {
  Trial& t = *trial_;
  std::set<std::string> names;
  for (const auto& c : t.collections()) names.insert(c.name);
  // smdebug's six built-in collections are always there, next to the ones added.
  EXPECT_EQ(names, (std::set<std::string>{"all", "biases", "default", "dtypes", "gradients", "losses", "mine", "reduced",
                                          "shapes", "weights"}));

  auto members = [&](std::string_view name) {
    const auto* c = t.collection(name);
    EXPECT_NE(c, nullptr) << name;
    return c ? c->tensor_names : std::vector<std::string>{};
  };
  std::vector<std::string> dtypes{"dt_str"};
  for (const auto& d : kDtypes) dtypes.push_back(d.name);
  std::ranges::sort(dtypes);
  EXPECT_EQ(members("dtypes"), dtypes);
  EXPECT_EQ(members("reduced"), (std::vector<std::string>{"red_bf16", "red_f16", "red_f32", "red_i32", "red_u8"}));
  EXPECT_EQ(members("shapes"), std::vector<std::string>{"shp_w"});
  EXPECT_EQ(members("gradients"), std::vector<std::string>{"gradient/w"});
  EXPECT_EQ(members("default"), std::vector<std::string>{"loose"});
  EXPECT_EQ(members("mine"), std::vector<std::string>{"custom"});

  const auto* reduced = t.collection("reduced");
  ASSERT_TRUE(reduced && reduced->reduction_config);
  EXPECT_TRUE(reduced->reduction_config->save_raw_tensor);
  EXPECT_TRUE(std::ranges::is_permutation(reduced->reduction_config->reductions, kReductions));
  const auto* shapes = t.collection("shapes");
  ASSERT_TRUE(shapes && shapes->reduction_config);
  EXPECT_TRUE(shapes->reduction_config->save_shape);
  EXPECT_FALSE(shapes->reduction_config->save_raw_tensor);
  const auto* def = t.collection("default");
  ASSERT_TRUE(def && def->reduction_config && def->save_config);
  EXPECT_TRUE(def->reduction_config->save_raw_tensor);
  for (const auto& sc : *def->save_config) {
    ASSERT_TRUE(sc);
    EXPECT_EQ(sc->save_interval, 1);
  }
}

}  // namespace
}  // namespace vigil::writer
