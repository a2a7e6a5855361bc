// The job's control socket: one Unix stream socket per job, served by the job's supervisor. It
// carries small control requests (update, stop: answered by the supervisor's `other` handler) and
// remote-debug sessions (sagemaker-api §8.1): a shell, or one command, run in a host's environment,
// relayed to `vigil attach` (control_client.h). The wire format is control_protocol.h.
//
// Security: the socket's folder is created by the server (a real folder owned by the server's euid,
// mode 0700, or 0711 when other local users may be allowed: they can reach the known socket name but
// not list the folder); the socket is 0600 (0666 when others may be allowed). Who a client is comes
// only from the kernel (SO_PEERCRED); the handlers decide what that identity may do.
//
// Limits: a request must arrive within 5 s of connecting, frames are at most 64 KiB, at most 16
// sessions run at once and at most 16 more connections wait for their request or reply; beyond that
// a client is refused with a message. Every failure is a message to the client and a line in the
// agent log; no exception leaves the server's threads and SIGPIPE never reaches the process.
//
// Processes: a session's process is a child of this process (its own session and process group,
// setsid). The server reaps its children by pid: the embedding process must not reap with
// waitpid(-1) or set SIGCHLD to SIG_IGN.
#pragma once

#include <chrono>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "remote_debug/control_protocol.h"
#include "remote_debug/peer_identity.h"

namespace vigil::remote_debug {

inline constexpr size_t kMaxLiveSessions = 16;

// What the start_session handler decides for an accepted StartSession request.
struct SessionPlan {
  // "<user>-<17 lowercase hex>" like SSM's ids. Left empty, the server makes one of that form from
  // the peer's user name and 68 random bits; a handler may set its own.
  std::string session_id;
  std::string target_id;          // "sagemaker-training-job:NAME_algo-2": for the session log
  std::vector<std::string> argv;  // the shell (interactive) or {"/bin/sh","-c",CMD}; argv[0] is the program's path
  // "KEY=VALUE", exactly the host's environment. For pty sessions the server adds TERM=<the client's
  // "Term"> when the request has one and `env` has no TERM.
  std::vector<std::string> env;
  std::filesystem::path cwd;  // the host's working directory
  bool pty = true;            // interactive: a pseudo-terminal; --command: no pty, stdout+stderr merged
  // Appended to, created 0600 where missing (its folder must exist); empty: no session log. One line
  // per record, each written whole: "<UTC time> <session id> <record>", records being
  //   start uid=<uid> user=<name> pid=<client pid> target=<target id> pty=yes|no
  //   input: <a line the client typed>      output: <a line the session wrote>
  //   end exit_status=<n>                   end ended: <why>   (client gone, end_sessions reason, ...)
  // Control bytes and backslashes in input/output are written as \xHH / \\ escapes; output is
  // logged as it flows (a partial line after a short pause), input line by line.
  std::filesystem::path session_log;
};

struct ControlHandlers {
  // StartSession requests ({"Action":"StartSession","Target":...,"Command":...}): a plan, or the
  // refusal text sent to the client (e.g. "AccessDeniedException: ..."). Called on a connection's
  // thread, possibly on several at once; must not throw (an exception is a refusal and a log line).
  std::function<std::expected<SessionPlan, std::string>(const PeerIdentity&, const nlohmann::json& request)>
      start_session;
  // Every other request: the JSON reply, sent as is ({"Ok": true|false, ...} by convention). Same
  // threading as start_session. Empty: such requests are refused.
  std::function<nlohmann::json(const PeerIdentity&, const nlohmann::json& request)> other;
  // The server's own errors (bad frames, failed spawns, ...), one "<UTC time> <message>" line each,
  // appended. Empty: standard error.
  std::filesystem::path agent_log;
  // How long a client has from connecting to its complete request (kHandshakeTimeout; tests shorten it).
  std::chrono::milliseconds request_timeout{kHandshakeTimeout};
};

class ControlServer {
 public:
  // Creates (or checks) the socket's folder, binds `socket_path` (replacing a stale socket of ours;
  // refusing one another server still listens on) and starts accepting on a thread of its own. The
  // handlers are kept by the server and called until it is destroyed.
  [[nodiscard]] static Result<std::unique_ptr<ControlServer>> start(const std::filesystem::path& socket_path,
                                                                    bool allow_other_users, ControlHandlers handlers);

  // Every live session (and every StartSession not yet running): the client is told `reason` (a
  // Close frame, which `vigil attach` prints), the session's process group gets SIGHUP, then SIGKILL
  // after 2 s. Returns when those sessions' processes are gone and their clients told.
  void end_sessions(std::string_view reason);

  // Sessions whose process runs (started and not yet ended).
  [[nodiscard]] size_t live_sessions() const;

  const std::filesystem::path& socket_path() const;

  // Stops accepting, ends the sessions ("the job's supervisor is stopping"), drops waiting
  // connections, removes the socket file, joins the threads.
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  struct Impl;

 private:
  explicit ControlServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vigil::remote_debug
