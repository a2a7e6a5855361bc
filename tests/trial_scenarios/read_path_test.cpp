// How values are read: in place inside the record buffer once the reader has learnt where a
// tensor's records put their content, exact values either way, event files opened once per trial
// window rather than per value.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <numeric>
#include <vector>

#include "test_support.h"
#include "trial/trial.h"
#include "writer/trial_writer.h"

namespace vigil {
namespace {

using test::ScratchDir;

// True when the value's bytes live inside the record buffer it was read into (no copy).
bool read_in_place(const TensorValue& v) {
  const auto* buffer = static_cast<const AlignedBuffer*>(v.owner().get());
  return buffer && v.bytes().data() != buffer->data();  // a copy starts at its own buffer's first byte
}

TEST(ReadPath, ValuesAreReadInPlaceOnceTheContentOffsetIsKnown) {
  ScratchDir dir;
  writer::WriterOptions options;
  for (auto& m : options.save_config) m.save_interval = 1;
  auto w = writer::TrialWriter::create(dir.path(), options);
  ASSERT_VIGIL_OK(w);
  // Names of 1 to 8 characters put the content at every offset modulo 8 in the record.
  std::vector<std::string> names;
  for (int len = 1; len <= 8; ++len) names.push_back(std::string(size_t(len), char('a' + len)));
  for (int64_t step = 0; step < 4; ++step) {
    ASSERT_TRUE((*w)->begin_step(Mode::Train));
    for (size_t i = 0; i < names.size(); ++i) {
      std::vector<double> v(1000);
      std::iota(v.begin(), v.end(), double(step * 1000 + int64_t(i)));
      writer::TensorData d{.dtype = ElementType::Float64, .shape = {1000}, .bytes = std::as_bytes(std::span(v))};
      ASSERT_TRUE((*w)->write_tensor(names[i], d));
    }
    ASSERT_TRUE((*w)->end_step());
  }
  ASSERT_TRUE((*w)->close());

  auto trial = Trial::open(dir.path());
  ASSERT_VIGIL_OK(trial);
  for (int64_t step = 0; step < 4; ++step)
    for (size_t i = 0; i < names.size(); ++i) {
      auto v = (*trial)->value(names[i], step);
      ASSERT_VIGIL_OK(v);
      ASSERT_EQ(v->size(), 1000u);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(v->bytes().data()) % alignof(double), 0u);
      const auto values = v->as<double>();
      EXPECT_EQ(values.front(), double(step * 1000 + int64_t(i)));
      EXPECT_EQ(values.back(), double(step * 1000 + int64_t(i) + 999));
      // After the first record of a tensor with a given length, its records are read where the content
      // is aligned (step 0's records are shorter: smdebug omits Event.step when it is 0).
      if (step >= 2) EXPECT_TRUE(read_in_place(*v)) << names[i] << " at step " << step;
    }
}

TEST(ReadPath, ManyEventFilesAreReadThroughABoundedSetOfOpenFiles) {
  // More steps (event files) than the reader keeps open: values stay exact while files rotate.
  ScratchDir dir;
  test::write_worker(dir.path(), "worker_0", 1, test::range_steps(0, 149), true);
  auto trial = Trial::open(dir.path());
  ASSERT_VIGIL_OK(trial);
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t step = 149; step >= 0; step -= (pass ? 7 : 1)) {
      auto v = (*trial)->value("w", step);
      ASSERT_VIGIL_OK(v);
      EXPECT_EQ(v->as<float>()[0], float(step));
      EXPECT_EQ(v->as<float>()[1], float(step) + 0.5f);
    }
}

}  // namespace
}  // namespace vigil
