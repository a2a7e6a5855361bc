#include "remote_debug/session_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "common/os.h"

namespace vigil::remote_debug {

namespace {

// A line longer than this is written in parts (a binary stream without newlines stays bounded).
constexpr size_t kMaxLogLine = 4096;

// What this process last wrote to each session log (several sessions share one file).
struct WrittenLog {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t end = 0;  // the file's size after this process's last record
};
std::mutex written_logs_mutex;
std::map<std::filesystem::path, WrittenLog> written_logs;

// How `path` (open as `fd`) differs from what this process wrote to it; nullopt when it does not.
std::optional<std::string> alteration(const std::filesystem::path& path, int fd, const WrittenLog& written) {
  struct stat open_file {}, named {};
  if (::fstat(fd, &open_file) != 0) return std::nullopt;
  if (open_file.st_dev != written.dev || open_file.st_ino != written.ino ||
      ::lstat(path.c_str(), &named) != 0 || named.st_dev != written.dev || named.st_ino != written.ino)
    return "the log was removed or replaced since its last record";
  // Every record is written under written_logs_mutex: any other size is someone else's doing.
  if (open_file.st_size != written.end)
    return fmt::format("the log was {} since its last record ({} bytes where {} were written)",
                       open_file.st_size < written.end ? "truncated" : "written to by another process",
                       open_file.st_size, written.end);
  return std::nullopt;
}

}  // namespace

std::vector<std::string> altered_session_logs() {
  std::vector<std::string> out;
  std::lock_guard lock(written_logs_mutex);
  for (const auto& [path, written] : written_logs) {
    const os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
      out.push_back(fmt::format("{}: the log was removed since its last record", path.string()));
      continue;
    }
    if (auto what = alteration(path, fd.get(), written)) out.push_back(fmt::format("{}: {}", path.string(), *what));
  }
  return out;
}

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
  log.path_ = path;
  log.fd_.reset(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log.fd_) return fail(Error::io_write(path.string(), std::strerror(errno)));
  return log;
}

SessionLog::SessionLog(SessionLog&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::move(other.fd_)),
      session_id_(std::move(other.session_id_)),
      on_error_(std::move(other.on_error_)),
      failed_(other.failed_),
      input_(std::move(other.input_)),
      output_(std::move(other.output_)) {}

SessionLog::~SessionLog() = default;

void SessionLog::record(std::string_view text) {
  if (!fd_ || failed_) return;
  const std::string line = fmt::format("{} {} {}\n", utc_timestamp(), session_id_, text);
  std::lock_guard lock(written_logs_mutex);
  const auto known = written_logs.find(path_);
  if (known != written_logs.end())
    if (auto what = alteration(path_, fd_.get(), known->second)) {
      // Recorded where the log now is (a removed file is created anew), and told to the agent's log.
      fd_.reset(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
      if (!fd_) return;
      const std::string notice = fmt::format("{} {} {}\n", utc_timestamp(), session_id_, "altered: " + *what);
      (void)os::write_some(fd_.get(), notice);
      if (on_error_) on_error_(fmt::format("session log {}: {}", path_.string(), *what));
    }
  // One write: O_APPEND keeps concurrent sessions' lines whole.
  const os::IoOutcome wrote = os::write_some(fd_.get(), line);
  struct stat written {};
  if (::fstat(fd_.get(), &written) == 0) written_logs[path_] = {written.st_dev, written.st_ino, written.st_size};
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
