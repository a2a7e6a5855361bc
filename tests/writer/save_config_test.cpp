// Save configuration (spec §6.1-§6.2): which mode steps each collection saves, union semantics,
// per-collection overrides, and gradients never saved in EVAL / PREDICT.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "format/collections_json.h"
#include "format/index_json.h"
#include "format/trial_layout.h"
#include "test_support.h"

namespace vigil::writer {
namespace {

namespace fs = std::filesystem;
using test::numeric;
using test::read_file;
using test::ScratchDir;

format::SaveConfigMode save_config(int64_t interval, std::vector<int64_t> steps = {}, int64_t start = 0,
                                   std::optional<int64_t> end = std::nullopt) {
  format::SaveConfigMode sc;
  sc.save_interval = interval;
  sc.save_steps = std::move(steps);
  sc.start_step = start;
  sc.end_step = end;
  return sc;
}
format::SaveConfigMode every(int64_t interval) { return save_config(interval); }

format::CollectionConfig collection(std::string name, std::vector<std::string> regex) {
  format::CollectionConfig c;
  c.name = std::move(name);
  c.include_regex = std::move(regex);
  return c;
}

TEST(WriterSaveConfig, ShouldSaveStepUnionsSaveStepsWithTheInterval) {
  const format::SaveConfigMode sc = save_config(100, {7}, 150, 400);
  std::vector<int64_t> saved;
  for (int64_t s = 0; s < 1000; ++s)
    if (sc.should_save_step(s)) saved.push_back(s);
  EXPECT_EQ(saved, (std::vector<int64_t>{7, 200, 300}));
  const format::SaveConfigMode doc = save_config(100, {}, 0, 200);  // spec §6.1 example
  EXPECT_TRUE(doc.should_save_step(0));
  EXPECT_TRUE(doc.should_save_step(100));
  EXPECT_FALSE(doc.should_save_step(200));
}

TEST(WriterSaveConfig, SelectsExactlyTheConfiguredSteps) {
  ScratchDir dir;
  WriterOptions options;
  options.clock = [] { return 1.0; };
  options.save_config[0] = save_config(3, {5}, 2, 12);  // TRAIN
  options.save_config[1] = every(2);                     // EVAL
  options.save_config[2] = save_config(1, {}, 0, 2);     // PREDICT
  options.save_config[3] = every(8);                     // GLOBAL
  auto writer = TrialWriter::create(dir.path(), options);
  ASSERT_TRUE(writer);
  auto& w = **writer;
  ASSERT_TRUE(w.add_collection(collection("a", {"^a"})));
  auto b = collection("b", {"^b", "^ab"});
  b.save_config = std::array<std::optional<format::SaveConfigMode>, 4>{every(4), std::nullopt, std::nullopt,
                                                                        std::nullopt};
  ASSERT_TRUE(w.add_collection(b));
  ASSERT_TRUE(w.add_collection(collection("gradients", {"^gradient"})));

  const std::vector<std::string> names{"a_x", "b_x", "ab_x", "gradient/x"};
  const std::vector<float> v{1.0f};
  // (mode, mode step) -> names should_save() selected.
  std::map<std::pair<Mode, int64_t>, std::set<std::string>> selected;
  auto run = [&](Mode mode, int steps) {
    for (int i = 0; i < steps; ++i) {
      ASSERT_TRUE(w.begin_step(mode));
      for (const auto& n : names) {
        if (w.should_save(n)) selected[{mode, w.mode_step()}].insert(n);
        ASSERT_TRUE(w.save_tensor(n, numeric(ElementType::Float32, {1}, v)));
      }
    }
  };
  run(Mode::Train, 15);   // global 0-14
  run(Mode::Eval, 5);     // global 15-19
  run(Mode::Predict, 3);  // global 20-22
  run(Mode::Global, 3);   // global 23-25, mode step = global step
  ASSERT_TRUE(w.close());

  using S = std::set<std::string>;
  std::map<std::pair<Mode, int64_t>, S> expected;
  for (int64_t s : {3, 5, 6, 9}) expected[{Mode::Train, s}] = {"a_x", "ab_x", "gradient/x"};
  for (int64_t s : {0, 4, 8, 12}) {
    expected[{Mode::Train, s}].insert("b_x");
    expected[{Mode::Train, s}].insert("ab_x");
  }
  for (int64_t s : {0, 2, 4}) expected[{Mode::Eval, s}] = {"a_x", "b_x", "ab_x"};  // never gradients
  for (int64_t s : {0, 1}) expected[{Mode::Predict, s}] = {"a_x", "b_x", "ab_x"};
  expected[{Mode::Global, 24}] = {"a_x", "b_x", "ab_x", "gradient/x"};
  EXPECT_EQ(selected, expected);

  // The files on disk hold exactly the selected tensors, one index per saved step.
  std::map<std::pair<Mode, int64_t>, S> on_disk;
  for (const auto& e : fs::recursive_directory_iterator(dir / "index")) {
    if (!e.is_regular_file()) continue;
    auto parsed = format::parse_index_json(read_file(e.path()), e.path().string());
    ASSERT_VIGIL_OK(parsed);
    auto file = format::parse_step_file_name(e.path().string());
    ASSERT_TRUE(file);
    S names_in_file;
    for (const auto& t : parsed->tensor_payload) names_in_file.insert(t.tensorname);
    on_disk[{parsed->mode, parsed->mode_step}] = names_in_file;
    // Global step numbering: TRAIN 0-14, EVAL 15-19, PREDICT 20-22, GLOBAL 23-25.
    const int64_t base = parsed->mode == Mode::Train ? 0 : parsed->mode == Mode::Eval ? 15 : parsed->mode == Mode::Predict ? 20 : 0;
    EXPECT_EQ(file->global_step, base + parsed->mode_step);
  }
  EXPECT_EQ(on_disk, expected);

  // The collections file fills every mode: the collection's own config, else the writer's.
  auto parsed = format::parse_collections_json(read_file(dir / "collections/000000000/worker_0_collections.json"), "c");
  ASSERT_TRUE(parsed);
  for (const auto& c : parsed->collections) {
    ASSERT_TRUE(c.save_config) << c.name;
    for (size_t m = 0; m < 4; ++m) ASSERT_TRUE((*c.save_config)[m]) << c.name << " mode " << m;
    const auto& train = *(*c.save_config)[0];
    if (c.name == "b") {
      EXPECT_EQ(train.save_interval, 4);
      EXPECT_FALSE(train.end_step);
    } else {
      EXPECT_EQ(train.save_interval, 3);
      EXPECT_EQ(train.save_steps, std::vector<int64_t>{5});
      EXPECT_EQ(train.start_step, 2);
      EXPECT_EQ(train.end_step, 12);
    }
    EXPECT_EQ((*c.save_config)[1]->save_interval, 2);
    EXPECT_EQ((*c.save_config)[2]->end_step, 2);
    EXPECT_EQ((*c.save_config)[3]->save_interval, 8);
  }
}

TEST(WriterSaveConfig, ModeStepsCountPerModeAndResumeExplicitly) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  std::vector<std::tuple<int64_t, Mode, int64_t>> seen;
  auto step = [&](Mode m) {
    ASSERT_TRUE(w.begin_step(m));
    seen.emplace_back(w.global_step(), w.mode(), w.mode_step());
  };
  step(Mode::Train);
  step(Mode::Train);
  step(Mode::Eval);
  step(Mode::Train);
  step(Mode::Global);
  ASSERT_TRUE(w.begin_step_at(100, Mode::Eval, 7));
  seen.emplace_back(w.global_step(), w.mode(), w.mode_step());
  step(Mode::Eval);
  step(Mode::Train);
  using T = std::tuple<int64_t, Mode, int64_t>;
  EXPECT_EQ(seen, (std::vector<T>{T{0, Mode::Train, 0}, T{1, Mode::Train, 1}, T{2, Mode::Eval, 0},
                                  T{3, Mode::Train, 2}, T{4, Mode::Global, 4}, T{100, Mode::Eval, 7},
                                  T{101, Mode::Eval, 8}, T{102, Mode::Train, 3}}));
}

TEST(WriterSaveConfig, ReductionConfigsUnionAcrossDueCollections) {
  ScratchDir dir;
  auto writer = TrialWriter::create(dir.path());
  ASSERT_TRUE(writer);
  auto& w = **writer;
  auto shapes = collection("shapes", {"^t"});
  shapes.reduction_config = format::ReductionConfig{.save_raw_tensor = false, .reductions = {}, .save_shape = true};
  auto norms = collection("norms", {"^t"});
  norms.reduction_config =
      format::ReductionConfig{.save_raw_tensor = false, .reductions = {{"l2", false}, {"min", false}}, .save_shape = false};
  auto more = collection("more", {"^t"});
  more.reduction_config =
      format::ReductionConfig{.save_raw_tensor = false, .reductions = {{"min", false}, {"max", true}}, .save_shape = false};
  ASSERT_TRUE(w.add_collection(shapes));
  ASSERT_TRUE(w.add_collection(norms));
  ASSERT_TRUE(w.add_collection(more));
  const std::vector<double> v{1, -2};
  ASSERT_TRUE(w.begin_step(Mode::Train));
  ASSERT_TRUE(w.save_tensor("t", numeric(ElementType::Float64, {2}, v)));
  // An explicit collection with the default reduction config adds the raw tensor.
  ASSERT_TRUE(w.save_tensor("t2", numeric(ElementType::Float64, {2}, v), std::vector<std::string>{"extra"}));
  ASSERT_TRUE(w.end_step());
  auto parsed = format::parse_index_json(read_file(dir / "index/000000000/000000000000_worker_0.json"), "i");
  ASSERT_TRUE(parsed);
  std::vector<std::string> names;
  for (const auto& e : parsed->tensor_payload) names.push_back(e.tensorname);
  // smdebug goes collection by collection (here by name: more, norms, shapes), each once: more's min
  // and abs max, then norms' l2.
  EXPECT_EQ(names, (std::vector<std::string>{"smdebug/reductions/min/t", "smdebug/reductions/abs_max/t",
                                             "smdebug/reductions/l2/t", "smdebug/reductions/min/t2",
                                             "smdebug/reductions/abs_max/t2", "smdebug/reductions/l2/t2", "t2"}));
  ASSERT_EQ(parsed->shape_payload.size(), 2u);
  EXPECT_EQ(parsed->shape_payload[0].tensorname, "t");
  EXPECT_EQ(parsed->shape_payload[0].shape, std::vector<int64_t>{2});
}

}  // namespace
}  // namespace vigil::writer
