// One remote-debug session's relay: the client's frames to the session's process and its output back,
// with backpressure both ways, until the process exits, the client leaves, or the server ends it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "remote_debug/control_protocol.h"
#include "remote_debug/session_log.h"
#include "remote_debug/session_process.h"

namespace vigil::remote_debug {

class SessionRelay {
 public:
  // The fds the relay waits on; the connection's, not the relay's.
  struct Fds {
    int client_fd = -1;  // the client's socket (non-blocking)
    int wake_fd = -1;    // readable once the server wants the session ended (end_reason says why)
    int stop_fd = -1;    // readable once the server stops
  };
  struct Hooks {
    std::function<void(std::string_view)> agent_log;        // what the agent's log should say
    std::function<std::optional<std::string>()> end_reason;  // why the server ends the session, if it does
    std::function<void()> ended;  // the process is gone and its end logged: before the client hears of it
  };

  SessionRelay(Fds fds, SessionProcess& process, SessionLog& log, FrameDecoder& decoder, std::string session_id,
               Hooks hooks);
  // Relays until the session ends; the process is gone (exited, or hung up) when it returns.
  void run();

 private:
  void read_output(size_t limit);
  // Sends what is buffered for the client, waiting for room until `deadline`: false once the client
  // is gone (a write error).
  bool flush_to_client(std::chrono::steady_clock::time_point deadline);
  // The client's frames decoded so far (the first ones may have come with the request).
  void take_client_frames();
  // One wait and what it found; false once the session ends.
  bool relay_once();
  void finish();

  Fds fds_;
  SessionProcess& process_;
  SessionLog& log_;
  FrameDecoder& decoder_;
  std::string session_id_;
  Hooks hooks_;

  std::string to_client_, to_child_;
  bool client_input_ended_ = false;  // the client's empty Input frame, handed on once to_child_ is written
  bool child_input_broken_ = false;
  std::optional<std::string> ended_;  // why the session is ended from this side (hang up)
  bool tell_client_ = false;          // ... and whether the client hears the reason
  std::optional<int> status_;
};

}  // namespace vigil::remote_debug
