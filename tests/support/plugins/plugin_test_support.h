// The plugin-host and evaluator suites' helpers (the purpose-built plugins, a vigil process stopped by
// SIGTERM), beside the project's test_support.h.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "plugin_host/plugin_loader.h"
#include "test_support.h"

extern char** environ;

namespace vigil::test {

inline std::filesystem::path variant_dir(const std::string& name) {
  return std::filesystem::path(VIGIL_TEST_PLUGIN_DIR) / name;
}

inline plugin_host::PluginRegistry registry_with(std::initializer_list<const char*> variants) {
  plugin_host::PluginRegistry registry;
  for (const char* v : variants) registry.load_directory(variant_dir(v));
  return registry;
}

// Starts `args` (a `vigil evaluate ... --status-file status_file` command line), waits until it has
// written the status file, sends SIGTERM and returns the final status file. The process must exit 0.
inline nlohmann::json evaluate_then_sigterm(std::vector<std::string> args, const std::filesystem::path& status_file) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    ADD_FAILURE() << "cannot start " << args.front();
    return {};
  }
  // Wait until it runs, then stop it. A stop that comes before the rules run stops them just the same.
  for (int i = 0; i < 200 && !std::filesystem::exists(status_file); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(::kill(pid, SIGTERM), 0);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
  std::ifstream in(status_file);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

}  // namespace vigil::test
