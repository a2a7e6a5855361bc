// The S3 test server (tests/support/s3_test_server.py: s3rver behind a proxy that checks SigV4
// signatures and injects faults) as a child process of a test binary, and the configuration that
// reaches it. Started once per binary by the suites that talk to S3; stopping it closes its input.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include <memory>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "storage/s3_config.h"

namespace vigil::test {

class S3ServerProcess {
 public:
  // Runs `/usr/bin/python3 <script> <buckets...>` and waits (up to a minute) for its JSON line.
  [[nodiscard]] static Result<std::unique_ptr<S3ServerProcess>> start(const std::string& script,
                                                                       const std::vector<std::string>& buckets = {"trials"});
  ~S3ServerProcess();
  S3ServerProcess(const S3ServerProcess&) = delete;
  S3ServerProcess& operator=(const S3ServerProcess&) = delete;

  // The addresses and AWS variables the server printed (endpoint, proxy, control, AWS_*).
  const nlohmann::json& info() const { return info_; }
  // A configuration through the checking proxy (path-style), with quick backoff for tests.
  storage::S3Config config() const;

  // The fault rules of the proxy (s3_test_server.py's docstring), replacing any before.
  void set_faults(const nlohmann::json& rules) const;
  // Every request the proxy saw since the last clear: [{method, path, status}].
  nlohmann::json requests() const;
  void clear_requests() const;

 private:
  S3ServerProcess() = default;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  nlohmann::json info_;
};

// A suite whose tests share one S3 test server: started before its first test, stopped after its
// last (a suite's CMake list names it in vigil_test_suite's WHOLE_SUITES, so that its tests run
// in one process); each test begins with no faults and an empty request log. No server fails every test,
// never skips it. A suite that overrides SetUp calls this one first and stops on a fatal failure.
class S3ServerSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override;

  static inline std::unique_ptr<S3ServerProcess> server_;
  static inline std::string start_error_;
};

}  // namespace vigil::test
