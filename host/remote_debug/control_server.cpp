#include "remote_debug/control_server.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "common/os.h"
#include "common/process.h"
#include "remote_debug/control_protocol.h"
#include "remote_debug/control_socket.h"
#include "remote_debug/session_log.h"
#include "remote_debug/session_process.h"
#include "remote_debug/session_relay.h"

namespace vigil::remote_debug {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// The session id SSM's way: "<user>-<17 lowercase hex digits>".
std::string new_session_id(std::string_view user) {
  unsigned char random[9] = {};
  if (::getrandom(random, sizeof random, 0) != ssize_t(sizeof random)) {
    const auto t = uint64_t(Clock::now().time_since_epoch().count()) ^ uint64_t(::getpid());
    std::memcpy(random, &t, sizeof t);
  }
  std::string hex;
  for (unsigned char b : random) hex += fmt::format("{:02x}", b);
  hex.resize(17);
  std::string name;
  for (char c : user)
    name.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_');
  if (name.empty()) name = "user";
  return name + "-" + hex;
}

// A TERM value worth passing on: a terminfo name, nothing that could smuggle more.
bool plausible_term(const std::string& term) {
  if (term.empty() || term.size() > 64) return false;
  for (char c : term)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.' && c != '+') return false;
  return true;
}

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// The pty's initial size from the request's "TerminalSize", else 24x80.
WindowSize requested_window(const nlohmann::json& request) {
  WindowSize size{24, 80};
  auto it = request.find("TerminalSize");
  if (it == request.end() || !it->is_object()) return size;
  auto dimension = [&](const char* key, uint16_t fallback) -> uint16_t {
    auto d = it->find(key);
    if (d == it->end() || !d->is_number_integer()) return fallback;
    const int64_t v = d->get<int64_t>();
    return v >= 1 && v <= 65535 ? uint16_t(v) : fallback;
  };
  return WindowSize{dimension("Rows", size.rows), dimension("Cols", size.cols)};
}

// Slots shared by uids (control_server.h's limits): the owner may take any free slot; another uid at
// most kMaxSlotsPerOtherUser, and the other uids together leave kSlotsKeptForTheOwner free. Not
// thread-safe: the server's mutex guards it.
class SlotsByUid {
 public:
  explicit SlotsByUid(size_t capacity) : capacity_(capacity) {}
  bool take(uid_t uid) {
    if (total_ >= capacity_) return false;
    size_t& mine = held_[uid];
    if (uid != ::geteuid()) {
      const auto owner = held_.find(::geteuid());
      const size_t others = total_ - (owner == held_.end() ? 0 : owner->second);
      if (mine >= kMaxSlotsPerOtherUser || others >= capacity_ - kSlotsKeptForTheOwner) {
        if (mine == 0) held_.erase(uid);
        return false;
      }
    }
    ++mine;
    ++total_;
    return true;
  }
  void give_back(uid_t uid) {
    auto it = held_.find(uid);
    if (it == held_.end() || it->second == 0) return;
    if (--it->second == 0) held_.erase(it);
    --total_;
  }

 private:
  size_t capacity_;
  size_t total_ = 0;
  std::map<uid_t, size_t> held_;
};

// Makes an eventfd readable.
void wake(int event_fd) {
  const uint64_t one = 1;
  (void)os::write_some(event_fd, std::string_view(reinterpret_cast<const char*>(&one), sizeof one));
}

}  // namespace

// One accepted connection and its thread.
struct Connection {
  PeerIdentity peer;  // from accept: credentials only, the user name filled on the connection's thread
  os::UniqueFd fd;
  os::UniqueFd wake_fd;  // eventfd: end_sessions() wrote the reason
  std::thread thread;
  std::thread::id thread_id;
  std::atomic<bool> done{false};
  // Guarded by the server's mutex.
  bool is_session = false;
  std::optional<std::string> end_reason;
};

struct ControlServer::Impl {
  ListeningSocket listener;
  ControlHandlers handlers;
  os::UniqueFd stop_fd;  // eventfd, readable once the server stops
  std::thread accept_thread;

  mutable std::mutex mu;
  std::condition_variable changed;
  std::list<std::shared_ptr<Connection>> connections;
  SlotsByUid session_slots{kMaxLiveSessions};           // StartSession requests being prepared or running
  size_t running_sessions = 0;                           // sessions whose process runs
  SlotsByUid waiting_slots{kMaxWaitingConnections};      // connections not (yet) sessions

  // The agent log's limits (control_server.h), guarded by agent_log_mu.
  std::mutex agent_log_mu;
  Clock::time_point log_minute_start{};
  size_t lines_this_minute = 0;
  size_t unlogged_messages = 0;      // over the lines a minute
  size_t unadmitted_peers = 0;       // closed at accept: uids `admits` refuses
  size_t busy_refusals = 0;          // closed at accept: no slot for the uid

  void agent_log(std::string_view message) noexcept;
  void count_at_accept(size_t Impl::*counter) noexcept;
  // The counts not yet reported, as a line; empty when there are none. Under agent_log_mu.
  std::string unreported_counts();
  void write_agent_log(const std::string& text);  // under agent_log_mu
  void accept_loop();
  bool accept_one();  // false once the server stops
  void serve(Connection& c);
  void serve_request(Connection& c, const PeerIdentity& peer, FrameDecoder& decoder);
  void serve_session(Connection& c, const PeerIdentity& peer, const nlohmann::json& request, FrameDecoder& decoder);
  // A session's place among the kMaxLiveSessions: held from the request until the session's
  // process is gone and its end logged (released before the client hears the end, so that a client
  // that saw its session end finds it ended everywhere).
  class SessionSlot {
   public:
    SessionSlot(Impl& impl, uid_t uid) : impl_(impl), uid_(uid) {}
    ~SessionSlot() { release(); }
    void set_running() {
      std::lock_guard lock(impl_.mu);
      ++impl_.running_sessions;
      running_ = true;
    }
    void release() {
      if (released_) return;
      released_ = true;
      {
        std::lock_guard lock(impl_.mu);
        impl_.session_slots.give_back(uid_);
        if (running_) --impl_.running_sessions;
      }
      impl_.changed.notify_all();
    }

   private:
    Impl& impl_;
    uid_t uid_;
    bool running_ = false;
    bool released_ = false;
  };
  std::optional<std::string> end_reason(Connection& c);
  void reply(Connection& c, const nlohmann::json& body);
  void join_finished();
};

void ControlServer::Impl::agent_log(std::string_view message) noexcept {
  try {
    std::lock_guard lock(agent_log_mu);
    const auto now = Clock::now();
    if (now - log_minute_start >= std::chrono::minutes(1)) {
      log_minute_start = now;
      lines_this_minute = 0;
    }
    if (lines_this_minute >= kAgentLogLinesPerMinute) {
      ++unlogged_messages;
      return;
    }
    ++lines_this_minute;
    // Cut before escaping: a message may hold a client's text, and a line stays a line.
    std::string text = unreported_counts();
    text += fmt::format("{} control server: {}{}\n", utc_timestamp(),
                        escape_log_text(message.substr(0, kMaxAgentLogMessage)),
                        message.size() > kMaxAgentLogMessage ? fmt::format("... ({} bytes)", message.size()) : "");
    write_agent_log(text);
  } catch (...) {
    // Out of memory while reporting: nothing better to do than go on.
  }
}

void ControlServer::Impl::count_at_accept(size_t Impl::*counter) noexcept {
  std::lock_guard lock(agent_log_mu);
  ++(this->*counter);
}

std::string ControlServer::Impl::unreported_counts() {
  if (unlogged_messages == 0 && unadmitted_peers == 0 && busy_refusals == 0) return {};
  std::string line = fmt::format(
      "{} control server: not logged since the last line: {} messages over {} a minute, {} connections of uids the "
      "access policy does not name (closed at once), {} connections refused as busy\n",
      utc_timestamp(), unlogged_messages, kAgentLogLinesPerMinute, unadmitted_peers, busy_refusals);
  unlogged_messages = unadmitted_peers = busy_refusals = 0;
  return line;
}

void ControlServer::Impl::write_agent_log(const std::string& text) {
  if (handlers.agent_log.empty()) {
    (void)os::write_all(STDERR_FILENO, text);
    return;
  }
  const auto open_log = [&] {
    return os::UniqueFd(
        ::open(handlers.agent_log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  };
  os::UniqueFd fd = open_log();
  struct stat st {};
  if (fd && ::fstat(fd.get(), &st) == 0 && uintmax_t(st.st_size) >= kMaxAgentLogBytes) {
    // The previous file is kept as ".1", the one before it dropped: at most two files' worth on disk.
    fs::path previous = handlers.agent_log;
    previous += ".1";
    if (::rename(handlers.agent_log.c_str(), previous.c_str()) == 0) fd = open_log();
  }
  if (fd) (void)os::write_all(fd.get(), text);
}

void ControlServer::Impl::reply(Connection& c, const nlohmann::json& body) {
  std::string payload = dump(body);
  if (payload.size() > kMaxFramePayload) {
    agent_log(fmt::format("a reply of {} bytes is over the frame limit: sent as an error", payload.size()));
    payload = dump(error_reply("the reply is too large for the control socket"));
  }
  if (auto sent = send_all(c.fd.get(), encode_frame(FrameType::Reply, payload)); !sent)
    agent_log(fmt::format("cannot send a reply: {}", sent.error().message));
}

std::optional<std::string> ControlServer::Impl::end_reason(Connection& c) {
  std::lock_guard lock(mu);
  return c.end_reason;
}

void ControlServer::Impl::join_finished() {
  std::list<std::shared_ptr<Connection>> finished;
  {
    std::lock_guard lock(mu);
    for (auto it = connections.begin(); it != connections.end();) {
      if ((*it)->done.load()) {
        finished.push_back(std::move(*it));
        it = connections.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& c : finished)
    if (c->thread.joinable()) c->thread.join();
}

void ControlServer::Impl::accept_loop() {
  os::block_sigpipe_on_this_thread();  // common/os.h: EPIPE, never SIGPIPE
  for (;;) {
    try {
      if (!accept_one()) return;
    } catch (const std::exception& e) {
      agent_log(fmt::format("accepting a connection failed: {}", e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    } catch (...) {
      agent_log("accepting a connection failed with an unknown exception");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

bool ControlServer::Impl::accept_one() {
  pollfd fds[2] = {{listener.fd(), POLLIN, 0}, {stop_fd.get(), POLLIN, 0}};
  const int ready = os::poll(fds, std::chrono::milliseconds(1000));
  if (ready < 0) {
    agent_log(fmt::format("cannot wait for connections: {}", errno_text(errno)));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (fds[1].revents & POLLIN) return false;
  join_finished();
  if (ready <= 0 || !(fds[0].revents & POLLIN)) return true;
  auto c = std::make_shared<Connection>();  // before accept: a failed allocation leaks no fd
  c->fd.reset(::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!c->fd) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
      agent_log(fmt::format("cannot accept a connection: {}", errno_text(errno)));
      // EMFILE and the like: do not spin on a listening socket that stays readable.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
  }
  // Who it is, from the kernel, before anything is read or written: a uid the job names no one as
  // is closed at once, with no reply, so that it can neither hold a slot nor fill the log.
  auto credentials = peer_credentials(c->fd.get());
  if (!credentials) {
    agent_log(credentials.error().message);
    return true;
  }
  c->peer = *credentials;
  const bool owner = c->peer.uid == ::geteuid();
  bool admitted = false;
  try {
    admitted = owner || !handlers.admits || handlers.admits(c->peer.uid);
  } catch (...) {
    admitted = false;
  }
  if (!admitted) {
    count_at_accept(&Impl::unadmitted_peers);
    return true;  // `c` closes the fd
  }
  bool has_slot = false;
  {
    std::lock_guard lock(mu);
    has_slot = waiting_slots.take(c->peer.uid);
  }
  if (!has_slot) {
    // Never blocks the accept thread: the reply fits the socket's buffer or is dropped.
    const std::string frame = encode_frame(
        FrameType::Reply,
        dump(error_reply(fmt::format("the job's control socket is busy (at most {} connections wait, {} of one user "
                                     "other than the job's): try again",
                                     kMaxWaitingConnections, kMaxSlotsPerOtherUser))));
    (void)os::write_some(c->fd.get(), frame);
    count_at_accept(&Impl::busy_refusals);
    return true;  // `c` closes the fd
  }
  c->wake_fd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!c->wake_fd) {
    agent_log(fmt::format("cannot create an eventfd: {}", errno_text(errno)));
    std::lock_guard lock(mu);
    waiting_slots.give_back(c->peer.uid);
    return true;
  }
  try {
    std::lock_guard lock(mu);
    connections.push_back(c);
    c->thread = std::thread([this, c] {
      serve(*c);
      {
        std::lock_guard inner(mu);
        c->done = true;
      }
      changed.notify_all();
    });
    c->thread_id = c->thread.get_id();
  } catch (const std::exception& e) {
    agent_log(fmt::format("cannot start a connection's thread: {}", e.what()));
    std::lock_guard lock(mu);
    connections.remove(c);
    waiting_slots.give_back(c->peer.uid);
  }
  return true;
}

void ControlServer::Impl::serve(Connection& c) {
  os::block_sigpipe_on_this_thread();  // common/os.h: EPIPE, never SIGPIPE
  try {
    PeerIdentity peer = c.peer;
    peer.user_name = user_name_of(peer.uid);
    FrameDecoder decoder;
    serve_request(c, peer, decoder);
  } catch (const std::exception& e) {
    agent_log(fmt::format("a connection failed: {}", e.what()));
  } catch (...) {
    agent_log("a connection failed with an unknown exception");
  }
  // Closed here, not when the thread is joined: the client sees the end at once.
  c.fd.reset();
  std::lock_guard lock(mu);
  if (!c.is_session) waiting_slots.give_back(c.peer.uid);
}

void ControlServer::Impl::serve_request(Connection& c, const PeerIdentity& peer, FrameDecoder& decoder) {
  const std::string who = fmt::format("pid {} uid {} ({})", peer.pid, peer.uid, peer.user_name);
  auto frame = read_frame(c.fd.get(), decoder, Clock::now() + handlers.request_timeout, stop_fd.get());
  if (!frame) {
    const Error& e = frame.error();
    if (e.code == ErrorCode::Timeout) {
      agent_log(fmt::format("dropped {}: no request within {} ms", who, handlers.request_timeout.count()));
      reply(c, error_reply("no request in time: the connection is closed"));
    } else if (e.code == ErrorCode::Cancelled) {
      reply(c, error_reply("the job's supervisor is stopping"));
    } else if (e.code == ErrorCode::InvalidArgument) {
      agent_log(fmt::format("dropped {}: {}", who, e.message));
      reply(c, error_reply(e.message));
    } else {
      agent_log(fmt::format("dropped {}: {}", who, e.message));
    }
    return;
  }
  if (frame->type != FrameType::Request) {
    agent_log(
        fmt::format("dropped {}: the first frame is a {} frame, not a request", who, frame_type_name(frame->type)));
    reply(c, error_reply("bad request: the first frame must be a request"));
    return;
  }
  const nlohmann::json request = nlohmann::json::parse(frame->payload, nullptr, false);
  if (!request.is_object()) {
    agent_log(fmt::format("dropped {}: the request is not a JSON object", who));
    reply(c, error_reply("bad request: not a JSON object"));
    return;
  }
  const auto version = request.find("ProtocolVersion");
  if (version == request.end() || !version->is_number_integer() || version->get<int64_t>() != kControlProtocolVersion) {
    // Described, never copied: the value is the client's and may be 64 KiB.
    const std::string theirs = version == request.end()             ? "none"
                               : version->is_number_integer() ? std::to_string(version->get<int64_t>())
                                                              : fmt::format("a JSON {}", version->type_name());
    agent_log(fmt::format("refused {}: protocol version {}", who, theirs));
    reply(c, error_reply(fmt::format("the client speaks control protocol version {}, the job's supervisor version {}: "
                                     "use the vigil that started the job",
                                     theirs, kControlProtocolVersion)));
    return;
  }
  const auto action = request.find("Action");
  if (action != request.end() && action->is_string() && action->get_ref<const std::string&>() == "StartSession") {
    serve_session(c, peer, request, decoder);
    return;
  }
  if (!handlers.other) {
    reply(c, error_reply("the job's supervisor answers no such request"));
    return;
  }
  nlohmann::json answer;
  try {
    answer = handlers.other(peer, request);
  } catch (const std::exception& e) {
    agent_log(fmt::format("the request handler failed for {}: {}", who, e.what()));
    answer = error_reply("the job's supervisor failed to answer the request");
  } catch (...) {
    agent_log(fmt::format("the request handler failed for {} with an unknown exception", who));
    answer = error_reply("the job's supervisor failed to answer the request");
  }
  reply(c, answer);
}

void ControlServer::Impl::serve_session(Connection& c, const PeerIdentity& peer, const nlohmann::json& request,
                                        FrameDecoder& decoder) {
  const std::string who = fmt::format("pid {} uid {} ({})", peer.pid, peer.uid, peer.user_name);
  {
    std::lock_guard lock(mu);
    // Not a session without a slot: it stays counted with the waiting connections.
    if (session_slots.take(peer.uid)) {
      waiting_slots.give_back(peer.uid);
      c.is_session = true;
    }
  }
  if (!c.is_session) {
    agent_log(fmt::format("refused a session for {}: no session slot free for the user", who));
    reply(c, error_reply(fmt::format("too many sessions: at most {} run at once, {} of one user other than the job's",
                                     kMaxLiveSessions, kMaxSlotsPerOtherUser)));
    return;
  }
  SessionSlot slot(*this, peer.uid);

  std::expected<SessionPlan, std::string> plan =
      std::unexpected<std::string>("remote debugging is not available for this job");
  if (handlers.start_session) {
    try {
      plan = handlers.start_session(peer, request);
    } catch (const std::exception& e) {
      agent_log(fmt::format("the session handler failed for {}: {}", who, e.what()));
      plan = std::unexpected<std::string>("the job's supervisor failed to decide on the session");
    } catch (...) {
      agent_log(fmt::format("the session handler failed for {} with an unknown exception", who));
      plan = std::unexpected<std::string>("the job's supervisor failed to decide on the session");
    }
  }
  if (!plan) {
    agent_log(fmt::format("refused a session for {}: {}", who, plan.error()));
    reply(c, error_reply(plan.error()));
    return;
  }
  if (plan->session_id.empty()) plan->session_id = new_session_id(peer.user_name);
  if (auto term = request.find("Term");
      plan->pty && term != request.end() && term->is_string() && plausible_term(term->get_ref<const std::string&>()))
    os::set_env(plan->env, "TERM", term->get<std::string>());
  if (auto reason = end_reason(c)) {
    reply(c, error_reply(*reason));
    return;
  }
  auto log = SessionLog::open(plan->session_log, plan->session_id, [this](const std::string& m) { agent_log(m); });
  if (!log) {
    agent_log(fmt::format("refused session {} for {}: {}", plan->session_id, who, log.error().message));
    reply(c, error_reply("the session log cannot be written: the session is not started"));
    return;
  }
  auto process = SessionProcess::spawn(SessionCommand{
      .argv = plan->argv, .env = plan->env, .cwd = plan->cwd, .pty = plan->pty, .window = requested_window(request)});
  if (!process) {
    agent_log(fmt::format("session {} for {} did not start: {}", plan->session_id, who, process.error().message));
    reply(c, error_reply(process.error().message));
    return;
  }
  slot.set_running();
  log->start(peer.uid, peer.user_name, peer.pid, plan->target_id, plan->pty, plan->argv);
  reply(c, nlohmann::json{{"Ok", true}, {"SessionId", plan->session_id}, {"Pty", plan->pty}});
  SessionRelay relay({.client_fd = c.fd.get(), .wake_fd = c.wake_fd.get(), .stop_fd = stop_fd.get()}, *process, *log,
                     decoder, plan->session_id,
                     {.agent_log = [this](std::string_view m) { agent_log(m); },
                      .end_reason = [this, &c] { return end_reason(c); },
                      .ended = [&slot] { slot.release(); }});
  relay.run();
}

Result<std::unique_ptr<ControlServer>> ControlServer::start(const fs::path& socket_path, bool allow_other_users,
                                                            ControlHandlers handlers) {
  auto listener = ListeningSocket::open(socket_path, allow_other_users);
  if (!listener) return fail(listener.error());
  auto impl = std::make_unique<Impl>();
  impl->listener = std::move(*listener);
  impl->handlers = std::move(handlers);
  impl->stop_fd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl->stop_fd)
    return fail(Error{.code = ErrorCode::Io, .message = fmt::format("eventfd: {}", errno_text(errno))});
  try {
    Impl* raw = impl.get();
    impl->accept_thread = std::thread([raw] { raw->accept_loop(); });
  } catch (const std::exception& e) {
    return fail(Error::internal(fmt::format("cannot start the control server's thread: {}", e.what())));
  }
  return std::unique_ptr<ControlServer>(new ControlServer(std::move(impl)));
}

ControlServer::ControlServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

const fs::path& ControlServer::socket_path() const { return impl_->listener.path(); }

size_t ControlServer::live_sessions() const {
  std::lock_guard lock(impl_->mu);
  return impl_->running_sessions;
}

void ControlServer::end_sessions(std::string_view reason) {
  std::vector<std::shared_ptr<Connection>> ending;
  std::unique_lock lock(impl_->mu);
  for (auto& c : impl_->connections) {
    // The caller's own connection (a handler ending sessions) is not waited for.
    if (!c->is_session || c->done.load() || c->thread_id == std::this_thread::get_id()) continue;
    if (!c->end_reason) c->end_reason = std::string(reason);
    wake(c->wake_fd.get());
    ending.push_back(c);
  }
  impl_->changed.wait(
      lock, [&] { return std::all_of(ending.begin(), ending.end(), [](const auto& c) { return c->done.load(); }); });
}

ControlServer::~ControlServer() {
  wake(impl_->stop_fd.get());
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  std::list<std::shared_ptr<Connection>> all;
  {
    std::lock_guard lock(impl_->mu);
    all.swap(impl_->connections);
  }
  for (auto& c : all)
    if (c->thread.joinable()) c->thread.join();
  impl_->listener.remove();
  // What the limits left out is said once more at the end, whatever the minute.
  try {
    std::lock_guard lock(impl_->agent_log_mu);
    if (const std::string counts = impl_->unreported_counts(); !counts.empty()) impl_->write_agent_log(counts);
  } catch (...) {
    // Out of memory while reporting: nothing better to do than go on.
  }
}

}  // namespace vigil::remote_debug
