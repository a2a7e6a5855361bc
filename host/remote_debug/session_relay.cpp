#include "remote_debug/session_relay.h"

#include <poll.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/os.h"

namespace vigil::remote_debug {

namespace {

using Clock = std::chrono::steady_clock;

// Bytes buffered per direction before the relay stops reading that side (backpressure).
constexpr size_t kMaxBuffered = 256 * 1024;
// Output read from a finished session before its exit status is sent (a background writer left on
// the terminal must not keep the session open forever).
constexpr size_t kMaxDrainAfterExit = 1024 * 1024;
constexpr std::chrono::milliseconds kHangUpGrace{2000};
// How long pending output and the last frame may take to reach a client that stopped reading.
constexpr std::chrono::milliseconds kFinalFlush{2000};
// A partial output line (a prompt) goes to the session log after this pause.
constexpr int kPartialOutputPauseMs = 300;

}  // namespace

SessionRelay::SessionRelay(Fds fds, SessionProcess& process, SessionLog& log, FrameDecoder& decoder,
                           std::string session_id, Hooks hooks)
    : fds_(fds), process_(process), log_(log), decoder_(decoder), session_id_(std::move(session_id)),
      hooks_(std::move(hooks)) {}

void SessionRelay::run() {
  take_client_frames();
  while (!ended_ && !status_ && relay_once()) {
  }
  finish();
}

void SessionRelay::read_output(size_t limit) {
  char chunk[16 * 1024];
  size_t total = 0;
  while (process_.output_fd() >= 0 && total < limit) {
    const os::IoOutcome got = os::read_some(process_.output_fd(), chunk);
    if (got.bytes > 0) {
      const std::string_view data(chunk, got.bytes);
      log_.output(data);
      append_data_frames(to_client_, FrameType::Output, data);
      total += got.bytes;
      continue;
    }
    if (got.would_block()) return;
    process_.close_output();  // EOF, or EIO: the terminal's last user is gone
  }
}

bool SessionRelay::flush_to_client(Clock::time_point deadline) {
  const os::IoOutcome sent = os::write_all(fds_.client_fd, to_client_, deadline);
  to_client_.erase(0, sent.bytes);
  return sent.ok() || sent.error == ETIMEDOUT;
}

void SessionRelay::take_client_frames() {
  while (!ended_) {
    auto frame = decoder_.next();
    if (!frame) {
      hooks_.agent_log(fmt::format("session {}: {}", session_id_, frame.error().message));
      ended_ = "the client sent a bad frame";
      return;
    }
    if (!*frame) return;
    Frame& f = **frame;
    if (f.type == FrameType::Input) {
      if (f.payload.empty()) {
        client_input_ended_ = true;
      } else if (!client_input_ended_) {
        log_.input(f.payload);
        if (!child_input_broken_) to_child_ += f.payload;
      }
    } else if (f.type == FrameType::WindowSize) {
      if (auto size = decode_window_size(f.payload)) process_.set_window_size(*size);
    } else if (f.type == FrameType::Close) {
      ended_ = "the client closed the session";
    } else {
      hooks_.agent_log(fmt::format("session {}: the client sent a {} frame", session_id_, frame_type_name(f.type)));
      ended_ = "the client sent a frame a client does not send";
    }
  }
}

bool SessionRelay::relay_once() {
  if (auto reason = hooks_.end_reason()) {
    ended_ = *reason;
    tell_client_ = true;
    return false;
  }
  pollfd fds[6];
  nfds_t count = 0;
  auto add = [&](int fd, short events) -> int {
    if (fd < 0 || events == 0) return -1;
    fds[count] = {fd, events, 0};
    return int(count++);
  };
  const bool pty = process_.pty();
  short output_events = process_.output_fd() >= 0 && to_client_.size() < kMaxBuffered ? POLLIN : 0;
  short input_events = !to_child_.empty() && !child_input_broken_ ? POLLOUT : 0;
  if (pty) output_events |= input_events;
  const int at_socket =
      add(fds_.client_fd, short((to_child_.size() < kMaxBuffered ? POLLIN : 0) | (to_client_.empty() ? 0 : POLLOUT)));
  const int at_output = add(process_.output_fd(), output_events);
  const int at_input = pty ? -1 : add(process_.input_fd(), input_events);
  const int at_exit = add(process_.exit_fd(), POLLIN);
  const int at_wake = add(fds_.wake_fd, POLLIN);
  const int at_stop = add(fds_.stop_fd, POLLIN);
  int timeout = -1;
  if (log_.has_partial_output()) timeout = kPartialOutputPauseMs;
  if (process_.exit_fd() < 0) timeout = timeout < 0 ? 100 : std::min(timeout, 100);
  const int ready = os::poll(std::span(fds, count), std::chrono::milliseconds(timeout));
  if (ready < 0) {
    hooks_.agent_log(fmt::format("session {}: cannot wait: {}", session_id_, std::strerror(errno)));
    ended_ = "the job's control server failed";
    tell_client_ = true;
    return false;
  }
  if (ready == 0) log_.flush_partial_output();
  auto fired = [&](int at, short mask) { return at >= 0 && ready > 0 && (fds[at].revents & mask) != 0; };
  if (fired(at_stop, POLLIN)) {
    ended_ = "the job's supervisor is stopping";
    tell_client_ = true;
    return false;
  }
  if (fired(at_wake, POLLIN)) return true;  // end_reason() is set: the next turn ends the session

  if (fired(at_socket, POLLIN | POLLHUP | POLLERR)) {
    char chunk[16 * 1024];
    const os::IoOutcome got = os::read_some(fds_.client_fd, chunk);
    if (got.bytes == 0 && !got.would_block()) {
      ended_ = "the client disconnected";
      return false;
    }
    if (got.bytes > 0) decoder_.feed(std::string_view(chunk, got.bytes));
    take_client_frames();
    if (ended_) return false;
  }
  if (fired(at_socket, POLLOUT) && !flush_to_client(Clock::now())) {
    ended_ = "the client disconnected";
    return false;
  }
  const int child_input_at = pty ? at_output : at_input;
  if (fired(child_input_at, POLLOUT | POLLERR | POLLHUP) && !to_child_.empty()) {
    const os::IoOutcome sent = os::write_some(process_.input_fd(), to_child_);
    if (sent.bytes > 0) {
      to_child_.erase(0, sent.bytes);
    } else if (!sent.ok() && !sent.would_block()) {
      child_input_broken_ = true;  // the session stopped reading its input: what is left is dropped
      to_child_.clear();
    }
  }
  if (client_input_ended_ && to_child_.empty() && !child_input_broken_) {
    process_.end_input();
    child_input_broken_ = true;  // nothing more goes in
  }
  if (fired(at_output, POLLIN | POLLHUP | POLLERR)) read_output(kMaxBuffered);
  if (at_exit < 0 || fired(at_exit, POLLIN)) status_ = process_.exited();
  return true;
}

// The end is logged and the server told (hooks_.ended) before the client hears of it.
void SessionRelay::finish() {
  if (status_) {
    read_output(kMaxDrainAfterExit);
    process_.hang_up_leftovers();
    log_.end(fmt::format("exit_status={}", *status_));
    hooks_.ended();
    append_frame(to_client_, FrameType::Exit, encode_exit_status(*status_));
    flush_to_client(Clock::now() + kFinalFlush);
    return;
  }
  const int hung_up_status = process_.hang_up(kHangUpGrace);
  if (tell_client_) read_output(kMaxDrainAfterExit);
  log_.end(fmt::format("ended: {} (exit_status={})", *ended_, hung_up_status));
  hooks_.ended();
  if (tell_client_) {
    append_frame(to_client_, FrameType::Close, *ended_);
    flush_to_client(Clock::now() + kFinalFlush);
  }
}

}  // namespace vigil::remote_debug
