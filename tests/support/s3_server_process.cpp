#include "s3_server_process.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

extern char** environ;

namespace vigil::test {
namespace {

size_t append_body(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// One request to the control endpoint; a test failure (and "null") when it does not answer 200.
nlohmann::json control(const std::string& url, const std::string* post_body) {
  CURL* curl = curl_easy_init();
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  if (post_body) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, post_body->c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, long(post_body->size()));
  }
  const CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK || status != 200) {
    ADD_FAILURE() << "S3 test server control " << url << ": " << curl_easy_strerror(code) << ", HTTP " << status;
    return nullptr;
  }
  return nlohmann::json::parse(body, nullptr, false);
}

}  // namespace

Result<std::unique_ptr<S3ServerProcess>> S3ServerProcess::start(const std::string& script,
                                                                const std::vector<std::string>& buckets) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0) return fail(Error::internal("pipe2 failed"));
  if (pipe2(from_child, O_CLOEXEC) != 0) {
    close(to_child[0]);
    close(to_child[1]);
    return fail(Error::internal("pipe2 failed"));
  }
  std::vector<std::string> args = {"/usr/bin/python3", script};
  args.insert(args.end(), buckets.begin(), buckets.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  auto server = std::unique_ptr<S3ServerProcess>(new S3ServerProcess());
  const int spawned = posix_spawn(&server->pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  server->stdin_fd_ = to_child[1];
  if (spawned != 0) {
    server->pid_ = -1;
    close(from_child[0]);
    return fail(Error::internal(fmt::format("cannot run /usr/bin/python3 {}: error {}", script, spawned)));
  }
  // Its first line says where it listens; it prints nothing else to standard output.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{from_child[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, int(left.count())) <= 0) break;
    char buf[4096];
    const ssize_t n = read(from_child[0], buf, sizeof buf);
    if (n <= 0) break;
    line.append(buf, size_t(n));
  }
  close(from_child[0]);
  server->info_ = nlohmann::json::parse(line, nullptr, false);
  if (!server->info_.is_object() || !server->info_.contains("proxy"))
    return fail(Error::internal(fmt::format("the S3 test server ({}) did not start (is node installed? "
                                            "scripts/install-deps.sh); it printed '{}'",
                                            script, line)));
  return server;
}

S3ServerProcess::~S3ServerProcess() {
  if (stdin_fd_ >= 0) close(stdin_fd_);  // the server stops when its input closes
  if (pid_ <= 0) return;
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

storage::S3Config S3ServerProcess::config() const {
  storage::S3Config config;
  config.credentials = {info_["AWS_ACCESS_KEY_ID"].get<std::string>(), info_["AWS_SECRET_ACCESS_KEY"].get<std::string>(), ""};
  config.credentials_source = "the S3 test server";
  config.region = info_["AWS_REGION"].get<std::string>();
  config.endpoint = info_["proxy"].get<std::string>();
  config.custom_endpoint = true;
  config.request_timeout = std::chrono::seconds(10);
  config.backoff_base = std::chrono::milliseconds(1);
  config.backoff_cap = std::chrono::milliseconds(20);
  return config;
}

void S3ServerProcess::set_faults(const nlohmann::json& rules) const {
  const std::string body = rules.dump();
  control(info_["control"].get<std::string>() + "/faults", &body);
}

nlohmann::json S3ServerProcess::requests() const { return control(info_["control"].get<std::string>() + "/requests", nullptr); }

void S3ServerProcess::clear_requests() const {
  const std::string body;
  control(info_["control"].get<std::string>() + "/requests/clear", &body);
}

void S3ServerSuite::SetUpTestSuite() {
  auto started = S3ServerProcess::start(VIGIL_S3_TEST_SERVER);
  if (started) server_ = std::move(*started);
  else start_error_ = started.error().message;
}

void S3ServerSuite::SetUp() {
  ASSERT_TRUE(server_) << start_error_;
  server_->set_faults(nlohmann::json::array());
  server_->clear_requests();
}

}  // namespace vigil::test
