// The client side of the job's control socket (control_protocol.h): one control request, or a
// remote-debug session relayed between this process's terminal (or any fds) and the job's host.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/os.h"

namespace vigil::remote_debug {

// Connects to the job's control socket. Errors name the socket: ENOENT "no control socket at ...",
// EACCES "not allowed to reach the job's control socket ...", ECONNREFUSED "... does not answer".
// The fd is close-on-exec and blocking.
[[nodiscard]] Result<os::UniqueFd> connect_control_socket(const std::filesystem::path& socket_path);

// One request (a JSON object; "ProtocolVersion" is added), one reply: the reply as the server sent
// it, {"Ok": false, "Error": ...} included. Errors are the transport's (connect, a reply that is not
// a JSON object, none within 30 s).
[[nodiscard]] Result<nlohmann::json> control_request(const std::filesystem::path& socket_path,
                                                     const nlohmann::json& request);

// A StartSession request, then the session: prints "Starting session with SessionId: <id>" to
// stderr, relays `in_fd` to the session and its output to `out_fd` (both stay the caller's), and at
// the end prints "Exiting session with sessionId: <id>." to stderr. When `in_fd` is a terminal and
// the session has a pty: the terminal is in raw mode for the session (restored on every way out,
// SIGINT/SIGTERM/SIGHUP/SIGQUIT included: they end the session), its size is sent at the start and
// on every SIGWINCH, and TERM is passed on. The end of `in_fd` is the end of the session's input.
// Returns the session's exit status. Errors: a refusal (Error whose message is the server's text,
// e.g. "AccessDeniedException: ..."), a session ended by the server (ErrorCode::Cancelled, the
// server's reason as the message, e.g. "training job Completed"), or the transport's.
// Handles SIGWINCH and the signals above only for its duration (the previous handlers are restored).
[[nodiscard]] Result<int> run_session(const std::filesystem::path& socket_path, const nlohmann::json& request,
                                      int in_fd, int out_fd);

}  // namespace vigil::remote_debug
