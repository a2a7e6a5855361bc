// Kept only for tests/plugin_host, which includes this folder: the other suites use
// tests/support/test_support.h (vigil::test::ScratchDir, write_worker, range_steps, float_data).
// Delete it when tests/plugin_host moves to vigil_test_support.
// Helpers shared by the scenario tests: temporary trial folders and trials written with the writer.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "writer/trial_writer.h"

namespace vigil::testing {

// A fresh folder under the system temp dir, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("vigil-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline writer::TensorData float_data(const std::vector<float>& v, std::vector<int64_t> shape) {
  return writer::TensorData{.dtype = format::ElementType::Float32,
                            .shape = std::move(shape),
                            .bytes = std::as_bytes(std::span<const float>(v))};
}

struct StepSpec {
  int64_t global_step;
  Mode mode = Mode::Train;
  int64_t mode_step = -1;  // -1: same as the global step
};

// Writes one worker's steps, each holding the tensor "w" = [step, step+0.5].
inline void write_worker(const std::filesystem::path& dir, const std::string& worker, int64_t num_workers,
                         const std::vector<StepSpec>& steps, bool end_marker) {
  writer::WriterOptions options;
  options.worker = worker;
  options.num_workers = num_workers;
  options.write_end_marker = end_marker;
  for (auto& m : options.save_config) m.save_interval = 1;
  auto w = writer::TrialWriter::create(dir, options);
  ASSERT_TRUE(w.has_value()) << w.error().message;
  for (const auto& s : steps) {
    ASSERT_TRUE((*w)->begin_step_at(s.global_step, s.mode, s.mode_step < 0 ? s.global_step : s.mode_step));
    std::vector<float> v{float(s.global_step), float(s.global_step) + 0.5f};
    auto r = (*w)->write_tensor("w", float_data(v, {2}));
    ASSERT_TRUE(r.has_value()) << r.error().message;
    ASSERT_TRUE((*w)->end_step());
  }
  auto r = (*w)->close();
  ASSERT_TRUE(r.has_value()) << r.error().message;
}

inline std::vector<StepSpec> range_steps(int64_t first, int64_t last, std::vector<int64_t> skip = {}) {
  std::vector<StepSpec> out;
  for (int64_t s = first; s <= last; ++s)
    if (std::find(skip.begin(), skip.end(), s) == skip.end()) out.push_back({s});
  return out;
}

}  // namespace vigil::testing
