#include "remote_debug/session_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <ctime>

#include <fmt/format.h>

#include "common/os.h"

namespace vigil::remote_debug {

namespace {

// A line longer than this is written in parts (a binary stream without newlines stays bounded).
constexpr size_t kMaxLogLine = 4096;

}  // namespace

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  const size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(text, n);
}

std::string escape_log_text(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\')
      out += "\\\\";
    else if ((u < 0x20 && c != '\t') || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out.push_back(c);
  }
  return out;
}

Result<SessionLog> SessionLog::open(const std::filesystem::path& path, std::string session_id,
                                    std::function<void(const std::string&)> on_error) {
  SessionLog log;
  log.session_id_ = std::move(session_id);
  log.on_error_ = std::move(on_error);
  if (path.empty()) return log;
  log.fd_.reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log.fd_) return fail(Error::io_write(path.string(), std::strerror(errno)));
  return log;
}

SessionLog::SessionLog(SessionLog&& other) noexcept
    : fd_(std::move(other.fd_)),
      session_id_(std::move(other.session_id_)),
      on_error_(std::move(other.on_error_)),
      failed_(other.failed_),
      input_(std::move(other.input_)),
      output_(std::move(other.output_)) {}

SessionLog::~SessionLog() = default;

void SessionLog::record(std::string_view text) {
  if (!fd_ || failed_) return;
  const std::string line = fmt::format("{} {} {}\n", utc_timestamp(), session_id_, text);
  // One write: O_APPEND keeps concurrent sessions' lines whole.
  const os::IoOutcome wrote = os::write_some(fd_.get(), line);
  if (wrote.bytes != line.size()) {
    failed_ = true;
    if (on_error_)
      on_error_(fmt::format("session {}: cannot write the session log: {}", session_id_,
                            !wrote.ok() ? std::strerror(wrote.error) : "short write"));
  }
}

void SessionLog::start(uid_t uid, std::string_view user, pid_t client_pid, std::string_view target, bool pty,
                       const std::vector<std::string>& argv) {
  record(fmt::format("start uid={} user={} pid={} target={} pty={}", uid, escape_log_text(user), client_pid,
                     escape_log_text(target), pty ? "yes" : "no"));
  std::string command;
  for (const auto& a : argv) {
    if (!command.empty()) command.push_back(' ');
    command += a;
  }
  record("command: " + escape_log_text(command));
}

void SessionLog::feed(LineSplitter& splitter, std::string_view bytes, std::string_view kind) {
  if (!fd_) return;
  // A line ends at '\n', at '\r' (a raw terminal's Enter) and at "\r\n" (a pty's newline) once.
  for (char c : bytes) {
    if (c == '\n' && splitter.after_cr) {
      splitter.after_cr = false;
      continue;
    }
    splitter.after_cr = c == '\r';
    if (c == '\n' || c == '\r') {
      record(fmt::format("{}: {}", kind, escape_log_text(splitter.line)));
      splitter.line.clear();
      continue;
    }
    splitter.line.push_back(c);
    if (splitter.line.size() >= kMaxLogLine) {
      record(fmt::format("{}: {}", kind, escape_log_text(splitter.line)));
      splitter.line.clear();
    }
  }
}

void SessionLog::input(std::string_view bytes) { feed(input_, bytes, "input"); }
void SessionLog::output(std::string_view bytes) { feed(output_, bytes, "output"); }

void SessionLog::flush_partial_output() {
  if (output_.line.empty()) return;
  record("output: " + escape_log_text(output_.line));
  output_.line.clear();
}

void SessionLog::end(std::string_view what) {
  if (!input_.line.empty()) record("input: " + escape_log_text(input_.line));
  input_.line.clear();
  flush_partial_output();
  record(fmt::format("end {}", what));
}

}  // namespace vigil::remote_debug
