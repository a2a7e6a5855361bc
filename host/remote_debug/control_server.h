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
// Limits (the policy is docs/remote-debug.md's "Limits of the control socket"): a peer whose uid
// `admits` refuses is closed at accept, without a reply or a log line of its own (counted). A request
// must arrive within 5 s of connecting, frames are at most 64 KiB, at most 16 sessions run at once and
// at most 16 more connections wait for their request or reply; of each, one uid other than the
// server's own (the job's owner) holds at most 4 and those uids together at most 12, so that the owner
// always has 4. Beyond that a client is refused with a message. The agent log takes at most 30 lines
// a minute (the rest are counted), each message cut to 512 bytes, and is rotated at 1 MiB; no request
// content is copied into it beyond that cut. No exception leaves the server's threads and SIGPIPE
// never reaches the process.
//
// Processes: a session's process is a child of this process (its own session and process group,
// setsid). The server reaps its children by pid: the embedding process must not reap with
// waitpid(-1) or set SIGCHLD to SIG_IGN.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
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
inline constexpr size_t kMaxWaitingConnections = 16;  // connections not (yet) sessions
inline constexpr size_t kMaxSlotsPerOtherUser = 4;    // of each of the two above, for a uid not the server's
inline constexpr size_t kSlotsKeptForTheOwner = 4;    // of each, never taken by other uids
inline constexpr size_t kAgentLogLinesPerMinute = 30;
inline constexpr size_t kMaxAgentLogMessage = 512;             // bytes of one message, escaped after the cut
inline constexpr uintmax_t kMaxAgentLogBytes = uintmax_t(1) << 20;  // then rotated: two files at most

// What the start_session handler decides for an accepted StartSession request.
struct SessionPlan {
  // "<user>-<17 lowercase hex>" like SSM's ids. Left empty, the server makes one of that form from
  // the peer's user name and 68 random bits; a handler may set its own.
  std::string session_id;
  std::string target_id;          // "sagemaker-training-job:NAME_algo-2": for the session log
  std::vector<std::string> argv;  // the shell (interactive) or {"/bin/sh","-c",CMD}; argv[0] is the program's path
  // "KEY=VALUE", exactly the host's environment. For pty sessions the server sets TERM to the client's
  // "Term" when that is a terminfo name (at most 64 letters, digits and -_.+), in place of the plan's
  // TERM; any other "Term" is ignored. The client's "Term" reaches the session by this way only.
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
  // Whether a peer of this uid may hold a connection at all (the users the job's access policy names);
  // the server's own uid always may. Called on the accepting thread: must be quick and not throw.
  // Empty: every uid that can reach the socket.
  std::function<bool(uid_t)> admits;
  // The server's own errors (bad frames, failed spawns, ...), one "<UTC time> <message>" line each,
  // appended, within the limits above; rotated to "<agent_log>.1". Empty: standard error (not rotated).
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
