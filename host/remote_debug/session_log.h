// The session log of remote-debug sessions (SessionPlan::session_log; the session-logging
// preference of sagemaker-api §8.1): per session a start line, the command, what the client typed
// and what the session wrote, line by line as it flows, and an end line. Several sessions may
// append to one file at once: each line is one write() to an O_APPEND fd and names its session.
//
// Sessions run as the job's user, who owns the file: the log cannot be out of their reach without
// root. This process therefore remembers, per file, which file (device, inode) it wrote and how far,
// and checks before every record that it is still that file at that size: a log truncated,
// written to by another process, removed or replaced between records gets a line saying so (and `on_error` is told), and
// altered_session_logs() names such files at the job's end (docs/remote-debug.md).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/os.h"

namespace vigil::remote_debug {

// "2024-05-01T12:00:00Z" (UTC, now).
[[nodiscard]] std::string utc_timestamp();

// `bytes` for a one-line record: backslash as "\\", control bytes (but tab) as "\xHH"; other bytes as
// they are (UTF-8 stays readable).
[[nodiscard]] std::string escape_log_text(std::string_view bytes);

// The session logs written by this process that were truncated, removed or replaced since their
// last record, each as "<path>: <what happened>".
[[nodiscard]] std::vector<std::string> altered_session_logs();

class SessionLog {
 public:
  // Opens `path` for appending (created 0600 when missing; never through a symbolic link). An
  // empty path is a log that records nothing. `on_error` is told of the first failed write (at
  // most once); it must outlive the log.
  [[nodiscard]] static Result<SessionLog> open(const std::filesystem::path& path, std::string session_id,
                                               std::function<void(const std::string&)> on_error = {});
  SessionLog(SessionLog&& other) noexcept;
  SessionLog& operator=(SessionLog&&) = delete;
  SessionLog(const SessionLog&) = delete;
  ~SessionLog();

  // "start uid=... user=... pid=... target=... pty=yes|no", then "command: <argv>".
  void start(uid_t uid, std::string_view user, pid_t client_pid, std::string_view target, bool pty,
             const std::vector<std::string>& argv);
  void input(std::string_view bytes);
  void output(std::string_view bytes);
  [[nodiscard]] bool has_partial_output() const { return !output_.line.empty(); }
  // A pause in the output: the partial line so far (a prompt) is written now.
  void flush_partial_output();
  // The partial lines, then "end <what>".
  void end(std::string_view what);

 private:
  struct LineSplitter {
    std::string line;
    bool after_cr = false;
  };
  SessionLog() = default;
  void feed(LineSplitter& splitter, std::string_view bytes, std::string_view kind);
  void record(std::string_view text);

  std::filesystem::path path_;
  os::UniqueFd fd_;
  std::string session_id_;
  std::function<void(const std::string&)> on_error_;
  bool failed_ = false;
  LineSplitter input_, output_;
};

}  // namespace vigil::remote_debug
