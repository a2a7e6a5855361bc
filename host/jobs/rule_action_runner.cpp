#include "jobs/rule_action_runner.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/os.h"
#include "common/process.h"
#include "jobs/job_store.h"
#include "jobs/rule_actions.h"
#include "storage/curl_library.h"
#include <vigil/sdk/text.hpp>

namespace vigil::jobs {

namespace {

constexpr auto kDeliveryTimeout = std::chrono::seconds(10);
constexpr size_t kMaxVariableBytes = 32 * 1024;  // each VIGIL_NOTIFY_* variable of a notify command

std::vector<std::string> system_resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return {};
  std::vector<std::string> out;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) out.emplace_back(text);
  }
  ::freeaddrinfo(found);
  return out;
}

bool is_loopback_address(const std::string& address) {
  in_addr v4{};
  if (::inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, address.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

// Where a webhook may go: the URL's host resolved once, here, and only to a loopback address (a
// notification sink is a local stand-in for SNS, not a way to send a job's findings across the
// network). The check is on the address, not on the host's text: a name may resolve anywhere.
struct WebhookTarget {
  std::string resolve_entry;  // "host:port:address" for CURLOPT_RESOLVE: the connection goes there only
};
std::variant<WebhookTarget, std::string> webhook_target(const std::string& url, const HostResolver& resolve) {
  constexpr std::string_view kNotLoopback = "VIGIL_NOTIFY_WEBHOOK must be an http:// address on the loopback interface";
  const auto loaded = storage::curl_library();
  if (!loaded) return loaded.error().message;
  const storage::CurlLibrary& lib = **loaded;
  std::unique_ptr<CURLU, decltype(lib.url_cleanup)> parsed(lib.url(), lib.url_cleanup);
  if (!parsed || lib.url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return std::string(kNotLoopback);
  auto part = [&](CURLUPart which, unsigned flags = 0) {
    char* text = nullptr;
    std::string out;
    if (lib.url_get(parsed.get(), which, &text, flags) == CURLUE_OK && text != nullptr) out = text;
    lib.free(text);
    return out;
  };
  const std::string host = part(CURLUPART_HOST), port = part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (part(CURLUPART_SCHEME) != "http" || host.empty() || port.empty()) return std::string(kNotLoopback);
  const bool bracketed = host.front() == '[' && host.back() == ']';
  const std::vector<std::string> addresses = resolve(bracketed ? host.substr(1, host.size() - 2) : host);
  if (addresses.empty()) return fmt::format("{} ({} does not resolve)", kNotLoopback, host);
  const std::string& address = addresses.front();
  if (!is_loopback_address(address)) return fmt::format("{} ({} resolves to {})", kNotLoopback, host, address);
  const bool v6 = address.find(':') != std::string::npos;
  return WebhookTarget{fmt::format("{}:{}:{}", host, port, v6 ? "[" + address + "]" : address)};
}

std::string deliver_by_command(const std::string& command, const nlohmann::json& message) {
  auto pipe = os::make_pipe();
  if (!pipe) return "failed: no pipe";
  auto env = os::current_environment();
  // The message's members as variables too (VIGIL_NOTIFY_PROTOCOL, _ENDPOINT, _SUBJECT, ...).
  for (const auto& [key, value] : message.items()) {
    std::string name = "VIGIL_NOTIFY_";
    for (size_t i = 0; i < key.size(); ++i) {
      if (i > 0 && std::isupper(static_cast<unsigned char>(key[i])) && std::islower(static_cast<unsigned char>(key[i - 1])))
        name += '_';
      name += sdk::ascii_upper(key[i]);
    }
    // A variable is bounded (the kernel refuses one over 128 KiB, and so the whole command): a long
    // message is cut here, and whole on the command's input.
    std::string text = value.get<std::string>();
    if (text.size() > kMaxVariableBytes) text.resize(kMaxVariableBytes);
    os::set_env(env, name, text);
  }
  auto pid = os::spawn({.argv = {"/bin/sh", "-c", command},
                         .env = std::move(env),
                         .fds = {{.child = 0, .parent = pipe->read.get()}},
                         .group = os::SpawnOptions::Group::Own});
  pipe->read.reset();
  if (!pid) return "failed: " + pid.error().message;
  // The message goes to the command's input within the delivery's time. A command need not read it
  // (`echo sent >> file`, `logger ...`): one that exits first closes the pipe, and the write ends
  // with EPIPE, noted in this delivery's outcome (os::write_all: never a SIGPIPE).
  const auto deadline = std::chrono::steady_clock::now() + kDeliveryTimeout;
  const std::string body = message["Message"].get<std::string>() + "\n";
  os::set_nonblocking(pipe->write.get());
  const os::IoOutcome wrote = os::write_all(pipe->write.get(), body, deadline);
  pipe->write.reset();
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  auto ended = os::wait_exit(*pid, std::max(left, std::chrono::milliseconds(0)));
  if (!ended) {
    os::terminate(*pid, std::chrono::milliseconds(500));
    return fmt::format("failed: the command did not end within {} s (killed)", kDeliveryTimeout.count());
  }
  std::string unread;
  if (!wrote.ok())
    unread = fmt::format(" ({} after {} of {} bytes of the message)",
                         wrote.error == EPIPE ? "the command closed its input" : std::strerror(wrote.error),
                         wrote.bytes, body.size());
  const int code = ended->code();
  return (code == 0 ? "delivered" : fmt::format("failed: the command exited with {}", code)) + unread;
}

std::string deliver_by_webhook(const std::string& url, const HostResolver& resolve, const nlohmann::json& message) {
  const auto target = webhook_target(url, resolve ? resolve : HostResolver(system_resolve));
  if (const auto* refused = std::get_if<std::string>(&target)) return "failed: " + *refused;
  const storage::CurlLibrary& lib = **storage::curl_library();  // loaded: webhook_target needed it too
  CURL* curl = lib.easy_init();
  if (!curl) return "failed: no HTTP client";
  const std::string body = message.dump();
  curl_slist* headers = lib.slist_append(nullptr, "Content-Type: application/json");
  curl_slist* pinned = lib.slist_append(nullptr, std::get<WebhookTarget>(target).resolve_entry.c_str());
  lib.easy_setopt(curl, CURLOPT_URL, url.c_str());
  lib.easy_setopt(curl, CURLOPT_RESOLVE, pinned);
  lib.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http");
  lib.easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  lib.easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  lib.easy_setopt(curl, CURLOPT_TIMEOUT, long(kDeliveryTimeout.count()));
  lib.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  lib.easy_setopt(curl, CURLOPT_NOPROXY, "*");
  lib.easy_setopt(curl, CURLOPT_WRITEFUNCTION, +[](char*, size_t size, size_t n, void*) { return size * n; });
  const CURLcode rc = lib.easy_perform(curl);
  long status = 0;
  lib.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  lib.easy_cleanup(curl);
  lib.slist_free_all(headers);
  lib.slist_free_all(pinned);
  if (rc != CURLE_OK) return fmt::format("failed: {}", lib.easy_strerror(rc));
  return status >= 200 && status < 300 ? "delivered" : fmt::format("failed: HTTP {}", status);
}

}  // namespace

NotificationSink NotificationSink::from_environment() {
  NotificationSink sink;
  if (const char* c = std::getenv("VIGIL_NOTIFY_COMMAND")) sink.command = c;
  if (const char* w = std::getenv("VIGIL_NOTIFY_WEBHOOK")) sink.webhook_url = w;
  if (const char* m = std::getenv("VIGIL_NOTIFY_MAX_PER_HOUR")) sink.max_per_hour = std::max(0, std::atoi(m));
  return sink;
}

RuleActionRunner::RuleActionRunner(std::string job_name, std::filesystem::path audit_log, NotificationSink sink,
                                   Callbacks callbacks)
    : job_name_(std::move(job_name)), audit_log_(std::move(audit_log)), sink_(std::move(sink)), callbacks_(std::move(callbacks)) {}

RuleActionRunner::~RuleActionRunner() {
  for (auto& t : deliveries_)
    if (t.joinable()) t.join();
}

void RuleActionRunner::audit(const std::string& rule, const std::string& action, const std::string& target,
                             const std::string& outcome) {
  std::lock_guard lock(mutex_);
  std::ofstream out(audit_log_, std::ios::app);
  out << nlohmann::json{{"Time", epoch_seconds_now()}, {"TrainingJobName", job_name_}, {"RuleConfigurationName", rule},
                        {"Action", action}, {"Target", target}, {"Outcome", outcome}}
             .dump()
      << "\n";
}

void RuleActionRunner::on_issues_found(const std::string& configuration_name, const std::string& rule_class,
                                       const std::string& action_json, const std::string& details) {
  auto parsed = parse_rule_actions(action_json, job_name_);
  if (!parsed) {
    audit(configuration_name, "action_json", "", "skipped: " + parsed.error().message);
    return;
  }
  for (const auto& warning : parsed->warnings) audit(configuration_name, "action_json", "", "skipped: " + warning);
  for (const auto& action : parsed->actions) {
    switch (action.kind) {
      case RuleAction::Kind::StopTraining: {
        // smdebug stops the one InProgress job whose name starts with the prefix; locally the rule
        // runs for this job only, so any other choice is refused.
        auto chosen = choose_job_to_stop(action.training_job_prefix, callbacks_.in_progress_jobs());
        if (!chosen) {
          audit(configuration_name, "StopTraining", action.training_job_prefix, "skipped: " + chosen.error());
        } else if (*chosen != job_name_) {
          audit(configuration_name, "StopTraining", *chosen,
                fmt::format("refused: the rule runs for training job {} and may stop only that job", job_name_));
        } else {
          audit(configuration_name, "StopTraining", *chosen, "stopping");
          callbacks_.stop_this_job(fmt::format("Stopped by the StopTraining action of rule {}: {}", configuration_name,
                                               details.empty() ? rule_class : details));
        }
        break;
      }
      case RuleAction::Kind::Email:
        notify(configuration_name, "email", action.endpoint, rule_class, details);
        break;
      case RuleAction::Kind::Sms:
        notify(configuration_name, "sms", action.endpoint, rule_class, details);
        break;
    }
  }
}

void RuleActionRunner::notify(std::string rule, std::string protocol, std::string endpoint, std::string rule_class,
                              std::string details) {
  const std::string action = protocol == "email" ? "Email" : "SMS";
  bool allowed = false;
  {
    const double now = epoch_seconds_now();
    std::lock_guard lock(mutex_);
    std::erase_if(sent_times_, [&](double t) { return now - t > 3600; });
    allowed = int(sent_times_.size()) < sink_.max_per_hour;
    if (allowed) sent_times_.push_back(now);
  }
  if (!allowed) {
    audit(rule, action, endpoint, fmt::format("rate-limited: more than {} notifications in an hour", sink_.max_per_hour));
    return;
  }
  // SNS's message shape (sagemaker-api §5): subject and body name the rule class.
  nlohmann::json message{{"Protocol", protocol},
                         {"Endpoint", endpoint},
                         {"TopicArn", fmt::format("arn:aws:sns:{}:{}:SMDebugRules", local_region(), local_account())},
                         {"Subject", fmt::format("SMDebugRule:{} fired", rule_class)},
                         {"Message", fmt::format("SMDebugRule:{} fired. {}", rule_class, details)},
                         {"TrainingJobName", job_name_},
                         {"RuleConfigurationName", rule}};
  deliveries_.emplace_back([this, rule, action, endpoint, message] {
    os::block_sigpipe_on_this_thread();
    try {
      std::string outcome = "audited only (no VIGIL_NOTIFY_COMMAND or VIGIL_NOTIFY_WEBHOOK)";
      if (!sink_.command.empty()) outcome = "command " + deliver_by_command(sink_.command, message);
      if (!sink_.webhook_url.empty()) {
        const std::string web = "webhook " + deliver_by_webhook(sink_.webhook_url, sink_.resolve_host, message);
        outcome = sink_.command.empty() ? web : outcome + "; " + web;
      }
      audit(rule, action, endpoint, outcome);
    } catch (const std::exception& e) {
      audit(rule, action, endpoint, std::string("failed: ") + e.what());
    }
  });
}

}  // namespace vigil::jobs
