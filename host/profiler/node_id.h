// Who is writing, in the names smdebug and SageMaker use (format spec §8.1): the host from
// /opt/ml/input/config/resourceconfig.json ("algo-1"), else the machine's hostname; node ids never
// contain '_'.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace vigil::profiler {

// This container's resourceconfig.json: in $SM_INPUT_CONFIG_DIR when the training toolkit's variable
// is set (`vigil train` sets it for each host: one machine, several hosts), else /opt/ml/input/config.
[[nodiscard]] std::filesystem::path resource_config_path();

// Its "current_host"; nullopt when the file does not exist (not in a SageMaker container).
[[nodiscard]] Result<std::optional<std::string>> current_host_from_resource_config(
    const std::filesystem::path& path = resource_config_path());

// gethostname(), or "localhost" when it fails.
[[nodiscard]] std::string local_hostname();

// `text` with every '_' made '-'.
[[nodiscard]] std::string without_underscores(std::string text);

// A framework writer's node id: "<rank>-<current_host>" in a SageMaker container, else
// "<rank>_<hostname>", then '_' -> '-' (the rank is the pid when there is no distributed rank).
[[nodiscard]] std::string framework_node_id(int64_t rank, const std::optional<std::string>& current_host,
                                            std::string_view hostname);

// framework_node_id of this process: `rank` or, without one, the pid; the current host from
// `resource_config` when it names one (a resource configuration that cannot be read counts as
// none); local_hostname() otherwise.
[[nodiscard]] std::string this_process_node_id(
    std::optional<int64_t> rank,
    const std::filesystem::path& resource_config = resource_config_path());

// System metrics are per host, not per process: NodeId is the host part of the node id, and the
// file names end ".<algo-N>.json", which readers require (§8.6): the current host where it has that
// form, else "algo-1" (one machine outside SageMaker).
struct SystemNodeNames {
  std::string node_id;
  std::string file_host;
};
[[nodiscard]] SystemNodeNames system_node_names(const std::optional<std::string>& current_host,
                                                std::string_view hostname);

}  // namespace vigil::profiler
