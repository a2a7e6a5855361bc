#include "profiler/node_id.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/file_read.h"
#include "common/regex_limits.h"
#include "format/sagemaker_container.h"

namespace vigil::profiler {

std::filesystem::path resource_config_path() {
  namespace sagemaker = format::sagemaker;
  const char* dir = std::getenv(std::string(sagemaker::kInputConfigDirVariable).c_str());
  return std::filesystem::path(dir && *dir ? dir : std::string(sagemaker::kInputConfigDir)) / sagemaker::kResourceConfigFile;
}

Result<std::optional<std::string>> current_host_from_resource_config(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<std::string>{};
  auto text = read_whole_file(path);
  if (!text) return fail(std::move(text.error()));
  const auto doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("current_host") || !doc["current_host"].is_string() ||
      doc["current_host"].get<std::string>().empty())
    return fail(Error::invalid_argument(fmt::format("{}: no current_host string", path.string())));
  return std::optional<std::string>(doc["current_host"].get<std::string>());
}

std::string local_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string without_underscores(std::string text) {
  std::replace(text.begin(), text.end(), '_', '-');
  return text;
}

std::string framework_node_id(int64_t rank, const std::optional<std::string>& current_host, std::string_view hostname) {
  return without_underscores(current_host ? fmt::format("{}-{}", rank, *current_host)
                                          : fmt::format("{}_{}", rank, hostname));
}

std::string this_process_node_id(std::optional<int64_t> rank, const std::filesystem::path& resource_config) {
  auto host = current_host_from_resource_config(resource_config);
  return framework_node_id(rank.value_or(int64_t(::getpid())), host ? *host : std::nullopt, local_hostname());
}

SystemNodeNames system_node_names(const std::optional<std::string>& current_host, std::string_view hostname) {
  static const std::regex algo_host("algo-[0-9]+");
  SystemNodeNames names;
  names.node_id = without_underscores(std::string(current_host ? std::string_view(*current_host) : hostname));
  names.file_host = current_host && current_host->size() <= kMaxRegexSubjectLength &&  // it recurses per character
                               std::regex_match(*current_host, algo_host) ? *current_host : "algo-1";
  return names;
}

}  // namespace vigil::profiler
