// The wire format of the job's control socket, shared by the supervisor's ControlServer
// (control_server.h) and `vigil attach` / the control requests (control_client.h). It is a local
// contract between two programs of the same Vigil version, never a public API: every request says
// which protocol version it speaks and a server of another version refuses it.
//
// The byte stream in each direction is a sequence of frames:
//
//   +--------+------------------------------+-------------------+
//   | type   | length (uint32, big-endian)  | payload           |
//   | 1 byte | 4 bytes, at most 65536       | `length` bytes    |
//   +--------+------------------------------+-------------------+
//
//   type  dir   payload
//   'Q'   c->s  Request: a JSON object, always the first frame and the only one of a control request.
//               {"ProtocolVersion": 1, "Action": "StartSession", "Target": "...", "Command": "...", ...}
//               Members the client adds for sessions: "Term" (its TERM, for pty sessions) and
//               "TerminalSize": {"Rows": r, "Cols": c} (the pty's initial size).
//               Nothing in a request says who the client is: the server asks the kernel (SO_PEERCRED).
//   'R'   s->c  Reply: a JSON object, exactly one per request: {"Ok": true, ...} or
//               {"Ok": false, "Error": "<text for the user>"}. A started session's reply is
//               {"Ok": true, "SessionId": "<id>", "Pty": true|false}; a refusal ends the connection.
//   'I'   c->s  Input: bytes for the session's terminal (pty) or stdin (no pty). An empty Input frame
//               is the end of input: stdin is closed (no pty) or the terminal's EOF character (^D)
//               is typed (pty).
//   'O'   s->c  Output: bytes the session wrote (pty output, or stdout and stderr merged).
//   'W'   c->s  Window size: rows, cols as two uint16 big-endian (4 bytes). Ignored without a pty.
//   'X'   s->c  Exit: the session's exit status as an int32 big-endian (4 bytes): the exit code, or
//               128 + the signal number for a process killed by a signal. The server closes after it.
//   'C'   both  Close. c->s: terminate the session (its process group is hung up); payload ignored.
//               s->c: the server ended the session (UTF-8 reason, e.g. "training job Completed");
//               the server closes after it.
//
// Limits: a frame's payload is at most kMaxFramePayload bytes (a longer length is a protocol error:
// the server replies and disconnects); the request must arrive within kHandshakeTimeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace vigil::remote_debug {

inline constexpr int kControlProtocolVersion = 1;
inline constexpr uint32_t kMaxFramePayload = 64 * 1024;
inline constexpr size_t kFrameHeaderSize = 5;
inline constexpr std::chrono::seconds kHandshakeTimeout{5};

enum class FrameType : char {
  Request = 'Q',
  Reply = 'R',
  Input = 'I',
  Output = 'O',
  WindowSize = 'W',
  Exit = 'X',
  Close = 'C',
};

// "request", "reply", ... for messages; "unknown" for a byte that is no frame type.
[[nodiscard]] std::string_view frame_type_name(FrameType type);

struct Frame {
  FrameType type = FrameType::Request;
  std::string payload;
};

struct WindowSize {
  uint16_t rows = 0;
  uint16_t cols = 0;
};

// Appends one frame to `out`. `payload` must be at most kMaxFramePayload bytes (callers split
// longer data); a longer one is cut there.
void append_frame(std::string& out, FrameType type, std::string_view payload);
[[nodiscard]] std::string encode_frame(FrameType type, std::string_view payload);
// Appends Output/Input data of any length as as many frames as it takes.
void append_data_frames(std::string& out, FrameType type, std::string_view data);

[[nodiscard]] std::string encode_window_size(WindowSize size);
[[nodiscard]] std::optional<WindowSize> decode_window_size(std::string_view payload);
[[nodiscard]] std::string encode_exit_status(int32_t status);
[[nodiscard]] std::optional<int32_t> decode_exit_status(std::string_view payload);

// {"Ok": false, "Error": text}
[[nodiscard]] nlohmann::json error_reply(std::string text);

// Splits a byte stream into frames. Bytes are fed as they arrive; next() hands out complete frames.
class FrameDecoder {
 public:
  void feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete frame, nullopt when more bytes are needed, or an error for a frame type that
  // is no type or a length over kMaxFramePayload (the stream is unusable after that: the header is
  // known bad before its payload arrives, so nothing of it needs reading).
  [[nodiscard]] Result<std::optional<Frame>> next();
  [[nodiscard]] size_t buffered() const { return buffer_.size(); }

 private:
  std::string buffer_;
  size_t start_ = 0;  // consumed prefix of buffer_, dropped lazily
};

// Writes all of `bytes` to a socket (send with MSG_NOSIGNAL: a peer gone is EPIPE, never SIGPIPE).
// A non-blocking socket is waited for with poll.
[[nodiscard]] Result<void> send_all(int socket_fd, std::string_view bytes);

// Reads from `fd` into `decoder` until a whole frame is there. `deadline`: give up then (Timeout).
// `wake_fd` (>= 0): give up as Cancelled when it becomes readable (the server stopping).
[[nodiscard]] Result<Frame> read_frame(int fd, FrameDecoder& decoder,
                                       std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt,
                                       int wake_fd = -1);

}  // namespace vigil::remote_debug
