#include "remote_debug/control_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "common/os.h"
#include "remote_debug/control_protocol.h"
#include "remote_debug/control_socket.h"

namespace vigil::remote_debug {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::seconds kReplyTimeout{30};
constexpr size_t kMaxBuffered = 256 * 1024;

Error io_error(std::string message) { return Error{.code = ErrorCode::Io, .message = std::move(message)}; }

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

void write_stderr(std::string_view text) { (void)os::write_all(STDERR_FILENO, text); }

// The request with the protocol version, as one frame's payload.
Result<std::string> request_payload(nlohmann::json request) {
  if (!request.is_object()) return fail(Error::invalid_argument("a control request must be a JSON object"));
  request["ProtocolVersion"] = kControlProtocolVersion;
  std::string payload = dump(request);
  if (payload.size() > kMaxFramePayload)
    return fail(Error::invalid_argument(
        fmt::format("the request is {} bytes, over the control socket's {}", payload.size(), kMaxFramePayload)));
  return payload;
}

// The server closed before answering anything: it closes at once a uid its job's access policy names
// in no binding that allows something (control_server.h), and says nothing so as to be cheap to refuse.
Error unanswered(const fs::path& socket_path) {
  return io_error(fmt::format("the job's control socket {} closed the connection without answering: the job's access "
                              "policy allows your user (uid {}) nothing, or the job's supervisor is stopping",
                              socket_path.string(), ::geteuid()));
}

Result<nlohmann::json> read_reply(int fd, FrameDecoder& decoder, const fs::path& socket_path) {
  auto frame = read_frame(fd, decoder, Clock::now() + kReplyTimeout);
  if (!frame) {
    if (frame.error().code == ErrorCode::Timeout)
      return fail(Error{.code = ErrorCode::Timeout,
                        .message = fmt::format("no reply from the job's control socket {} within {} s",
                                               socket_path.string(), kReplyTimeout.count())});
    if (decoder.buffered() == 0) return fail(unanswered(socket_path));
    return fail(io_error(fmt::format("the job's control socket {}: {}", socket_path.string(), frame.error().message)));
  }
  if (frame->type != FrameType::Reply)
    return fail(io_error(fmt::format("the job's control socket {} answered with a {} frame, not a reply",
                                     socket_path.string(), frame_type_name(frame->type))));
  nlohmann::json reply = nlohmann::json::parse(frame->payload, nullptr, false);
  if (!reply.is_object())
    return fail(io_error(fmt::format("the job's control socket {} answered with something that is not a JSON object",
                                     socket_path.string())));
  return reply;
}

std::string reply_error(const nlohmann::json& reply) {
  auto it = reply.find("Error");
  return it != reply.end() && it->is_string() ? it->get<std::string>()
                                              : std::string("the job's supervisor refused the request");
}

// ---- the terminal and the signals of an interactive session --------------------------------------

// The write end of the self-pipe the handlers write the signal's number to (one session at a time).
std::atomic<int> g_signal_pipe{-1};

void on_session_signal(int sig) {
  const int saved = errno;
  const int fd = g_signal_pipe.load();
  if (fd >= 0) {
    const unsigned char byte = static_cast<unsigned char>(sig);
    [[maybe_unused]] ssize_t ignored = ::write(fd, &byte, 1);
  }
  errno = saved;
}

constexpr int kSessionSignals[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Raw mode and the handlers for the session's duration; everything restored by the destructor.
class InteractiveTerminal {
 public:
  // False where another session of this process holds the handlers or the pipe cannot be made.
  bool begin(int terminal_fd) {
    int expected = -1;
    auto pipe = os::make_pipe();
    if (!pipe) return false;
    os::set_nonblocking(pipe->read.get());
    os::set_nonblocking(pipe->write.get());
    if (!g_signal_pipe.compare_exchange_strong(expected, pipe->write.get())) return false;
    signal_pipe_ = std::move(*pipe);
    struct sigaction action {};
    action.sa_handler = on_session_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    for (size_t i = 0; i < std::size(kSessionSignals); ++i) {
      struct sigaction previous {};
      if (::sigaction(kSessionSignals[i], &action, &previous) == 0) saved_actions_[i] = previous;
    }
    if (::tcgetattr(terminal_fd, &saved_mode_) == 0) {
      termios raw = saved_mode_;
      ::cfmakeraw(&raw);
      if (::tcsetattr(terminal_fd, TCSAFLUSH, &raw) == 0) terminal_fd_ = terminal_fd;
    }
    return true;
  }
  int signal_fd() const { return signal_pipe_.read.get(); }
  ~InteractiveTerminal() {
    if (terminal_fd_ >= 0) ::tcsetattr(terminal_fd_, TCSAFLUSH, &saved_mode_);
    for (size_t i = 0; i < std::size(kSessionSignals); ++i)
      if (saved_actions_[i]) ::sigaction(kSessionSignals[i], &*saved_actions_[i], nullptr);
    if (signal_pipe_.write) g_signal_pipe.store(-1);
  }

 private:
  int terminal_fd_ = -1;
  termios saved_mode_{};
  os::Pipe signal_pipe_;
  std::optional<struct sigaction> saved_actions_[std::size(kSessionSignals)];
};

std::optional<WindowSize> terminal_size(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0) return std::nullopt;
  return WindowSize{ws.ws_row, ws.ws_col};
}

// Why this user may not connect: a folder on the way it cannot enter (a job started with the socket
// in its owner's private runtime folder), or the socket itself (a job whose policy grants no one else).
std::string unreachable_socket_message(const fs::path& socket_path) {
  for (fs::path dir = socket_path.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    struct stat st {};
    if (::faccessat(AT_FDCWD, dir.c_str(), X_OK, AT_EACCESS) != 0 && errno == EACCES && ::stat(dir.c_str(), &st) == 0)
      return fmt::format("not allowed to reach the job's control socket {}: the folder {} (uid {}, mode {:04o}) is closed "
                         "to your user (uid {}); the job's supervisor put its socket where only its own user can reach "
                         "it (a job whose access policy grants other users puts it under /tmp)",
                         socket_path.string(), dir.string(), st.st_uid, st.st_mode & 07777, ::geteuid());
    if (dir == dir.root_path()) break;
  }
  return fmt::format("not allowed to reach the job's control socket {}: the job's supervisor runs as another user "
                     "and its access policy grants no other user anything",
                     socket_path.string());
}

}  // namespace

Result<os::UniqueFd> connect_control_socket(const fs::path& socket_path) {
  const std::string path = socket_path.string();
  os::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fail(io_error(fmt::format("cannot create a socket: {}", std::strerror(errno))));
  // A path too long for sun_path is reached through its folder (/proc/self/fd/N/name).
  os::UniqueFd dir_fd;
  auto address = unix_address(path);
  if (!address) {
    dir_fd.reset(::open(socket_path.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd)
      address = unix_address(fmt::format("/proc/self/fd/{}/{}", dir_fd.get(), socket_path.filename().string()));
  }
  int err = ENAMETOOLONG;
  if (address && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address->first), address->second) == 0)
    err = 0;
  else if (address)
    err = errno;
  if (err == 0) return fd;
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return fail(io_error(fmt::format("no control socket at {}: the job is not running here (or has ended)", path)));
    case EACCES:
    case EPERM:
      return fail(io_error(unreachable_socket_message(socket_path)));
    case ECONNREFUSED:
      return fail(
          io_error(fmt::format("the job's control socket {} does not answer: its supervisor has stopped", path)));
    default:
      return fail(io_error(fmt::format("cannot connect to the job's control socket {}: {}", path, std::strerror(err))));
  }
}

Result<nlohmann::json> control_request(const fs::path& socket_path, const nlohmann::json& request) {
  auto payload = request_payload(request);
  if (!payload) return fail(payload.error());
  auto fd = connect_control_socket(socket_path);
  if (!fd) return fail(fd.error());
  if (auto sent = send_all(fd->get(), encode_frame(FrameType::Request, *payload)); !sent)
    return fail(unanswered(socket_path));
  FrameDecoder decoder;
  return read_reply(fd->get(), decoder, socket_path);
}

Result<int> run_session(const fs::path& socket_path, const nlohmann::json& request, int in_fd, int out_fd) {
  if (!request.is_object()) return fail(Error::invalid_argument("a session request must be a JSON object"));
  const bool in_is_terminal = ::isatty(in_fd) == 1;
  nlohmann::json start = request;
  if (in_is_terminal) {
    if (const char* term = std::getenv("TERM"); term && *term && !start.contains("Term")) start["Term"] = term;
    if (auto size = terminal_size(in_fd); size && !start.contains("TerminalSize"))
      start["TerminalSize"] = {{"Rows", size->rows}, {"Cols", size->cols}};
  }
  auto payload = request_payload(std::move(start));
  if (!payload) return fail(payload.error());
  auto connected = connect_control_socket(socket_path);
  if (!connected) return fail(connected.error());
  const int sock = connected->get();
  os::set_nonblocking(sock);  // the session's loop waits in poll only
  if (auto sent = send_all(sock, encode_frame(FrameType::Request, *payload)); !sent)
    return fail(unanswered(socket_path));
  FrameDecoder decoder;
  auto reply = read_reply(sock, decoder, socket_path);
  if (!reply) return fail(reply.error());
  if (!reply->value("Ok", false)) return fail(Error::invalid_argument(reply_error(*reply)));
  const std::string session_id = reply->value("SessionId", std::string());
  const bool pty = reply->value("Pty", false);
  write_stderr(fmt::format("Starting session with SessionId: {}\n", session_id));

  std::optional<Result<int>> outcome;
  {
    InteractiveTerminal terminal;
    const bool interactive = in_is_terminal && pty && terminal.begin(in_fd);
    std::string to_server;
    if (interactive)
      if (auto size = terminal_size(in_fd)) append_frame(to_server, FrameType::WindowSize, encode_window_size(*size));
    bool input_open = true;
    bool sending_broken = false;
    char chunk[16 * 1024];
    // The server's frames decoded so far (the first ones may have come with the reply).
    auto take_server_frames = [&] {
      while (!outcome) {
        auto frame = decoder.next();
        if (!frame) {
          outcome = fail(
              io_error(fmt::format("the job's control socket {}: {}", socket_path.string(), frame.error().message)));
          return;
        }
        if (!*frame) return;
        Frame& f = **frame;
        switch (f.type) {
          case FrameType::Output:
            if (const auto wrote = os::write_all(out_fd, f.payload); !wrote.ok()) {
              const int err = wrote.error;
              [[maybe_unused]] auto ignored = send_all(sock, encode_frame(FrameType::Close, {}));
              outcome = fail(io_error(fmt::format("cannot write the session's output: {}", std::strerror(err))));
            }
            break;
          case FrameType::Exit:
            if (auto status = decode_exit_status(f.payload))
              outcome = *status;
            else
              outcome = fail(io_error("the job's control socket sent a bad exit frame"));
            break;
          case FrameType::Close:
            outcome = fail(Error{
                .code = ErrorCode::Cancelled,
                .message = f.payload.empty() ? std::string("the job's supervisor ended the session") : f.payload});
            break;
          default:
            outcome = fail(io_error(
                fmt::format("the job's control socket sent a {} frame during the session", frame_type_name(f.type))));
            break;
        }
      }
    };
    take_server_frames();
    while (!outcome) {
      pollfd fds[3];
      nfds_t count = 0;
      const int at_sock = int(count);
      fds[count++] = {sock, short(POLLIN | (to_server.empty() || sending_broken ? 0 : POLLOUT)), 0};
      const int at_in = input_open && to_server.size() < kMaxBuffered ? int(count) : -1;
      if (at_in >= 0) fds[count++] = {in_fd, POLLIN, 0};
      const int at_signal = interactive ? int(count) : -1;
      if (at_signal >= 0) fds[count++] = {terminal.signal_fd(), POLLIN, 0};
      if (os::poll(std::span(fds, count), std::nullopt) < 0) {
        outcome = fail(io_error(fmt::format("cannot wait on the session: {}", std::strerror(errno))));
        break;
      }
      if (at_signal >= 0 && (fds[at_signal].revents & POLLIN)) {
        unsigned char sigs[64];
        const size_t n = os::read_some(terminal.signal_fd(), std::span(reinterpret_cast<char*>(sigs), sizeof sigs)).bytes;
        for (size_t i = 0; i < n && !outcome; ++i) {
          if (sigs[i] == SIGWINCH) {
            if (auto size = terminal_size(in_fd); size && !sending_broken)
              append_frame(to_server, FrameType::WindowSize, encode_window_size(*size));
          } else {
            // The session ends with this client: the server hangs up its processes.
            [[maybe_unused]] auto ignored = send_all(sock, encode_frame(FrameType::Close, {}));
            outcome = fail(Error{
                .code = ErrorCode::Cancelled,
                .message = fmt::format("the session was ended by signal {} ({})", int(sigs[i]), ::strsignal(sigs[i]))});
          }
        }
        if (outcome) break;
      }
      if (at_in >= 0 && (fds[at_in].revents & (POLLIN | POLLHUP | POLLERR))) {
        const os::IoOutcome got = os::read_some(in_fd, chunk);
        if (got.bytes > 0) {
          if (!sending_broken) append_data_frames(to_server, FrameType::Input, std::string_view(chunk, got.bytes));
        } else if (!got.would_block()) {
          input_open = false;  // end of input (EIO: a terminal gone)
          if (!sending_broken) append_frame(to_server, FrameType::Input, {});
        }
      }
      if ((fds[at_sock].revents & POLLOUT) && !to_server.empty()) {
        const os::IoOutcome sent = os::write_some(sock, to_server);
        if (sent.bytes > 0)
          to_server.erase(0, sent.bytes);
        else if (!sent.ok() && !sent.would_block()) {
          // The server stopped reading (the session is over): its last frames are still to be read.
          to_server.clear();
          input_open = false;
          sending_broken = true;
        }
      }
      if (fds[at_sock].revents & (POLLIN | POLLHUP | POLLERR)) {
        const os::IoOutcome got = os::read_some(sock, chunk);
        if (got.bytes == 0 && !got.would_block()) {
          outcome = fail(io_error(fmt::format("the job's control socket {} closed the session without an exit status",
                                              socket_path.string())));
          break;
        }
        if (got.bytes > 0) decoder.feed(std::string_view(chunk, got.bytes));
        take_server_frames();
      }
    }
  }  // the terminal is back in its mode before the closing line
  write_stderr(fmt::format("Exiting session with sessionId: {}.\n", session_id));
  return std::move(*outcome);
}

}  // namespace vigil::remote_debug
