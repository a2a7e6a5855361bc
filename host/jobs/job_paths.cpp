#include "jobs/job_paths.h"

#include <fmt/format.h>

#include "format/sagemaker_container.h"

namespace vigil::jobs {

namespace {

// `p` lexically normal and without the empty last element a trailing separator leaves.
fs::path normal_without_trailing_separator(const fs::path& p) {
  fs::path normal = p.lexically_normal();
  if (!normal.empty() && !normal.has_filename() && normal != normal.root_path()) normal = normal.parent_path();
  return normal;
}

}  // namespace

fs::path JobPaths::request() const { return root / "request.json"; }
fs::path JobPaths::state() const { return root / "state.json"; }
fs::path JobPaths::control_endpoint() const { return root / "control.json"; }
fs::path JobPaths::rule_status() const { return root / "rule-status.json"; }
fs::path JobPaths::output() const { return root / "output"; }
fs::path JobPaths::debug_output() const { return output() / "debug-output"; }
fs::path JobPaths::profiler_output() const { return output() / "profiler-output"; }
fs::path JobPaths::tensorboard_output() const { return output() / "tensorboard-output"; }
fs::path JobPaths::rule_output(std::string_view rule_configuration_name) const {
  return output() / "rule-output" / fs::path(std::string(rule_configuration_name));
}
fs::path JobPaths::artifacts() const { return output() / "output"; }
fs::path JobPaths::model_archive() const { return artifacts() / "model.tar.gz"; }
fs::path JobPaths::output_archive() const { return artifacts() / "output.tar.gz"; }
fs::path JobPaths::model_folder() const { return artifacts() / "model"; }
fs::path JobPaths::host_root(int host_index) const { return root / "hosts" / host_name(host_index); }
fs::path JobPaths::host_config_dir(int host_index) const { return host_root(host_index) / "input" / "config"; }
fs::path JobPaths::log_dir() const { return root / "logs"; }

JobPaths job_paths(const fs::path& jobs_dir, std::string_view training_job_name) {
  return JobPaths{jobs_dir / fs::path(std::string(training_job_name))};
}

std::string host_name(int host_index) { return fmt::format("algo-{}", host_index + 1); }

fs::path map_container_path(const JobPaths& paths, int host_index, std::string_view container_path) {
  const fs::path host_root = paths.host_root(host_index);
  const fs::path given{std::string(container_path)};
  if (given.is_relative()) return normal_without_trailing_separator(host_root / given);
  const fs::path normal = normal_without_trailing_separator(given);
  // Component by component, so that /opt/mlx is not taken for a path under /opt/ml.
  static const fs::path container_base{std::string(format::sagemaker::kContainerRoot)};
  auto base = container_base.begin();
  auto it = normal.begin();
  for (; base != container_base.end(); ++base, ++it)
    if (it == normal.end() || *it != *base) return normal;
  fs::path mapped = host_root;
  for (; it != normal.end(); ++it) mapped /= *it;
  return mapped;
}

}  // namespace vigil::jobs
