#include "jobs/job_outputs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vigil::jobs {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kFileScheme = "file://";

// The string member `key` of `object`, or "" (the request is validated: present members have their types).
std::string string_of(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The S3OutputPath of the request's member `config`, or "".
std::string output_path_of(const nlohmann::json& doc, std::string_view config) {
  auto it = doc.find(config);
  return it == doc.end() ? std::string() : string_of(*it, "S3OutputPath");
}

}  // namespace

std::string OutputLocation::uri() const {
  return local ? fmt::format("{}{}", kFileScheme, folder.string()) : s3.to_string();
}

OutputLocation OutputLocation::child(std::string_view relpath) const {
  OutputLocation out = *this;
  if (local) out.folder = (folder / fs::path(std::string(relpath))).lexically_normal();
  else out.s3.prefix = s3.prefix.empty() ? std::string(relpath) : fmt::format("{}/{}", s3.prefix, relpath);
  return out;
}

std::optional<std::string> output_location_problem(std::string_view text) {
  if (text.starts_with("s3://")) {
    auto uri = storage::parse_s3_uri(text);
    if (!uri) return fmt::format("Member must name an S3 location ({})", uri.error().message);
    return std::nullopt;
  }
  if (text.starts_with(kFileScheme)) {
    const std::string_view path = text.substr(kFileScheme.size());
    if (path.empty()) return std::string("Member must name a folder after file://");
    if (path.find('\0') != std::string_view::npos) return std::string("Member must not hold a NUL character");
    return std::nullopt;
  }
  if (text.starts_with("https://"))
    return std::string("Member must be an s3://bucket/prefix or file://folder location: vigil train does not upload to "
                       "https:// addresses (name the bucket as s3://bucket/prefix)");
  return std::string("Member must be an s3://bucket/prefix or file://folder location");
}

Result<OutputLocation> parse_output_location(std::string_view text, const fs::path& cwd) {
  if (auto problem = output_location_problem(text))
    return fail(Error::invalid_argument(fmt::format("'{}' is not an output location: {}", text, *problem)));
  OutputLocation out;
  if (text.starts_with(kFileScheme)) {
    out.local = true;
    fs::path path{std::string(text.substr(kFileScheme.size()))};
    if (path.is_relative()) path = cwd / path;
    out.folder = path.lexically_normal();
    // "file:///out/" names the folder /out: no empty last element.
    if (!out.folder.has_filename() && out.folder != out.folder.root_path()) out.folder = out.folder.parent_path();
    return out;
  }
  auto uri = storage::parse_s3_uri(text);
  if (!uri) return fail(uri.error());
  out.s3 = std::move(*uri);
  return out;
}

std::optional<std::string> rule_output_name_problem(std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos)
    return fmt::format("RuleConfigurationName '{}' names the rule's output folder rule-output/<name>/: it may not be "
                       "'.' or '..' or hold '/'",
                       name);
  return std::nullopt;
}

Result<std::vector<JobOutput>> plan_job_outputs(const TrainingJobRequest& request, const JobPaths& paths,
                                                const fs::path& cwd) try {
  const nlohmann::json& doc = request.document;
  auto base = parse_output_location(output_path_of(doc, "OutputDataConfig"), cwd);
  if (!base) return fail(base.error());

  std::vector<JobOutput> outputs;
  // `path`: the member's S3OutputPath, or "" to use OutputDataConfig's.
  auto add = [&](std::string name, fs::path local, const std::string& path, UploadTime when) -> Result<void> {
    OutputLocation where = *base;
    if (!path.empty()) {
      auto parsed = parse_output_location(path, cwd);
      if (!parsed) return fail(parsed.error());
      where = std::move(*parsed);
    }
    OutputLocation destination = where.child(fmt::format("{}/{}", request.name, name));
    outputs.push_back({std::move(name), std::move(local), std::move(destination), when});
    return {};
  };
  if (request.debug_hook)
    if (auto r = add("debug-output", paths.debug_output(), output_path_of(doc, "DebugHookConfig"), UploadTime::Live); !r)
      return fail(r.error());
  if (request.profiler)
    if (auto r = add("profiler-output", paths.profiler_output(), output_path_of(doc, "ProfilerConfig"), UploadTime::Live);
        !r)
      return fail(r.error());
  if (request.tensorboard)
    if (auto r = add("tensorboard-output", paths.tensorboard_output(),
                     output_path_of(doc, "TensorBoardOutputConfig"), UploadTime::Live);
        !r)
      return fail(r.error());
  for (const char* list : {"DebugRuleConfigurations", "ProfilerRuleConfigurations"}) {
    auto rules = doc.find(list);
    if (rules == doc.end() || !rules->is_array()) continue;
    for (const auto& rule : *rules) {
      const std::string name = string_of(rule, "RuleConfigurationName");
      if (auto problem = rule_output_name_problem(name)) return fail(Error::invalid_argument(*problem));
      if (auto r = add("rule-output/" + name, paths.rule_output(name), string_of(rule, "S3OutputPath"), UploadTime::Live); !r)
        return fail(r.error());
    }
  }
  if (auto r = add("output", paths.artifacts(), "", UploadTime::AtEnd); !r) return fail(r.error());
  return outputs;
} catch (const std::exception& e) {  // not expected: the request is validated
  return fail(Error::internal(fmt::format("planning the job's outputs: {}", e.what())));
}

bool compresses_model(const TrainingJobRequest& request) {
  auto it = request.document.find("OutputDataConfig");
  return it == request.document.end() || string_of(*it, "CompressionType") != "NONE";
}

}  // namespace vigil::jobs
