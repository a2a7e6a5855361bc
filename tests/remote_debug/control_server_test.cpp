// The job's control socket (host/remote_debug/control_server.h, control_client.h, control_protocol.h): the
// socket folder's rules, identities from the kernel only, the request limits, command and pty
// sessions relayed through run_session, the session log, and the ways a session ends.
#include "remote_debug/control_server.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <regex>
#include <fstream>
#include <sstream>
#include <thread>

#include "remote_debug/control_client.h"
#include "remote_debug/control_protocol.h"
#include "remote_debug/control_socket.h"
#include "remote_debug/peer_identity.h"
#include "remote_debug/session_log.h"
#include "test_support.h"

namespace vigil::remote_debug {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::ScratchDir;
using Clock = std::chrono::steady_clock;

constexpr uid_t kNobody = 65534;

// Waits (up to 10 s, no timing asserted) until `done` holds; whether it did.
template <typename Condition>
bool eventually(Condition done) {
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

// Whether some line of `text` holds every one of `parts`.
bool has_line_with(const std::string& text, std::initializer_list<std::string_view> parts) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    bool all = true;
    for (auto p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

// A connection that speaks the protocol by hand (to lie, to stall, to send what no client sends).
class RawClient {
 public:
  explicit RawClient(const fs::path& socket_path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~RawClient() { close(); }
  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void send_bytes(std::string_view bytes) { ASSERT_TRUE(send_all(fd_, bytes).has_value()); }
  void send(FrameType type, std::string_view payload) { send_bytes(encode_frame(type, payload)); }
  void send_request(json request) { send(FrameType::Request, request.dump()); }
  Result<Frame> next(std::chrono::seconds within = std::chrono::seconds(10)) {
    return read_frame(fd_, decoder_, Clock::now() + within);
  }
  json reply() {
    auto frame = next();
    EXPECT_TRUE(frame.has_value()) << (frame ? "" : frame.error().message);
    if (!frame) return {};
    EXPECT_EQ(frame->type, FrameType::Reply);
    return json::parse(frame->payload, nullptr, false);
  }
  // Reads output frames until `wanted` is in the output (or the session ends); the output so far.
  std::string output_until(std::string_view wanted, std::optional<int>* exit_status = nullptr) {
    while (output_.find(wanted) == std::string::npos) {
      auto frame = next();
      if (!frame) break;
      if (frame->type == FrameType::Output) output_ += frame->payload;
      if (frame->type == FrameType::Exit) {
        if (exit_status) *exit_status = decode_exit_status(frame->payload);
        break;
      }
      if (frame->type == FrameType::Close) break;
    }
    return output_;
  }
  // Whether the server closed the connection (EOF) within 10 s.
  bool closed_by_server() {
    for (;;) {
      auto frame = next();
      if (!frame) return frame.error().message.find("closed") != std::string::npos;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  FrameDecoder decoder_;
  std::string output_;
};

struct SessionResult {
  Result<int> status = 0;
  std::string output;
  std::string stderr_text;
};

class ControlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(workdir);
    decide = [this](const PeerIdentity&, const json& request) -> std::expected<SessionPlan, std::string> {
      return plan_for(request);
    };
  }

  // The plan the lead's callback would make: the request's Command without a pty, else a shell on one.
  SessionPlan plan_for(const json& request) {
    SessionPlan plan;
    plan.target_id = "sagemaker-training-job:" + request.value("Target", std::string("job_algo-1"));
    if (request.contains("Command")) {
      plan.argv = {"/bin/sh", "-c", request["Command"].get<std::string>()};
      plan.pty = false;
    } else {
      plan.argv = {"/bin/sh"};
      plan.pty = true;
    }
    plan.env = {"PATH=/usr/bin:/bin", "FOO=bar-value", "HOME=" + workdir.string()};
    plan.cwd = workdir;
    plan.session_log = session_log;
    return plan;
  }

  ControlHandlers handlers() {
    ControlHandlers h;
    h.start_session = [this](const PeerIdentity& peer, const json& request) {
      {
        std::lock_guard lock(mu);
        session_peers.push_back(peer);
      }
      return decide(peer, request);
    };
    h.other = [this](const PeerIdentity& peer, const json& request) {
      std::lock_guard lock(mu);
      other_peers.push_back(peer);
      return json{{"Ok", true}, {"Echo", request.value("Value", json())}, {"Uid", peer.uid}};
    };
    h.agent_log = agent_log;
    h.request_timeout = request_timeout;
    return h;
  }

  void start_server(bool allow_other_users = false) {
    auto started = ControlServer::start(socket_path, allow_other_users, handlers());
    ASSERT_VIGIL_OK(started);
    server = std::move(*started);
  }

  // run_session with `input` on a pipe (then its end) and the output collected from a file.
  SessionResult session(const json& request, std::string_view input) {
    int in[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::write(in[1], input.data(), input.size()), ssize_t(input.size()));
    ::close(in[1]);
    const fs::path out_path = scratch / fmt::format("output-{}", ++sessions_run);
    const int out = ::open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    SessionResult r;
    ::testing::internal::CaptureStderr();
    r.status = run_session(socket_path, request, in[0], out);
    r.stderr_text = ::testing::internal::GetCapturedStderr();
    ::close(in[0]);
    ::close(out);
    r.output = test::read_file(out_path);
    return r;
  }

  std::string log_text() { return test::read_file_if_present(session_log); }
  std::string agent_text() { return test::read_file_if_present(agent_log); }

  ScratchDir scratch{"vigil-control"};
  fs::path socket_path = scratch / "ctl" / "control.sock";
  fs::path session_log = scratch / "session.log";
  fs::path agent_log = scratch / "agent.log";
  fs::path workdir = scratch / "work";
  std::chrono::milliseconds request_timeout = kHandshakeTimeout;
  std::function<std::expected<SessionPlan, std::string>(const PeerIdentity&, const json&)> decide;
  std::mutex mu;
  std::vector<PeerIdentity> session_peers, other_peers;
  int sessions_run = 0;
  std::unique_ptr<ControlServer> server;  // last: destroyed first, while the rest is alive
};

// ---- the protocol -----------------------------------------------------------------------------

TEST(ControlProtocol, FramesFedByteByByteComeOutWhole) {
  std::string stream = encode_frame(FrameType::Request, R"({"Action":"X"})");
  append_frame(stream, FrameType::Input, "");
  append_frame(stream, FrameType::WindowSize, encode_window_size({33, 101}));
  append_frame(stream, FrameType::Exit, encode_exit_status(-7));
  FrameDecoder decoder;
  std::vector<Frame> frames;
  for (char c : stream) {
    decoder.feed(std::string_view(&c, 1));
    for (;;) {
      auto f = decoder.next();
      ASSERT_TRUE(f.has_value()) << f.error().message;
      if (!*f) break;
      frames.push_back(**f);
    }
  }
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].payload, R"({"Action":"X"})");
  EXPECT_EQ(frames[1].type, FrameType::Input);
  EXPECT_TRUE(frames[1].payload.empty());
  auto size = decode_window_size(frames[2].payload);
  ASSERT_TRUE(size.has_value());
  EXPECT_EQ(size->rows, 33);
  EXPECT_EQ(size->cols, 101);
  EXPECT_EQ(decode_exit_status(frames[3].payload), -7);
  EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(ControlProtocol, OversizedAndUnknownFramesAreErrors) {
  FrameDecoder big;
  std::string header = {'O', 0, 1, 0, 1};  // 65537 bytes
  big.feed(header);
  auto f = big.next();
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.error().message.find("65537 bytes"), std::string::npos) << f.error().message;

  FrameDecoder unknown;
  unknown.feed("Z\0\0\0\0");
  EXPECT_FALSE(unknown.next().has_value());

  std::string long_data(kMaxFramePayload + 10, 'a');
  std::string frames;
  append_data_frames(frames, FrameType::Output, long_data);
  EXPECT_EQ(frames.size(), long_data.size() + 2 * kFrameHeaderSize);
}

TEST(SessionLogText, ControlBytesAreEscaped) {
  EXPECT_EQ(escape_log_text("a\\b\x1b[0m\tc\x7f"), "a\\\\b\\x1b[0m\tc\\x7f");
}

// ---- sessions ---------------------------------------------------------------------------------

// Issue 28, item 7: a session runs as the job's user, who owns the log; one that erases the record
// of earlier sessions is found out at the next record and at the job's end.
TEST_F(ControlServerTest, ASessionThatRewritesTheSessionLogIsRecordedAsHavingDoneSo) {
  start_server();
  const auto first = session({{"Action", "StartSession"}, {"Target", "job_algo-1"}, {"Command", "echo earlier"}}, "");
  ASSERT_VIGIL_OK(first.status);
  ASSERT_TRUE(has_line_with(log_text(), {"output: earlier"})) << log_text();
  const auto eraser = session({{"Action", "StartSession"},
                               {"Target", "job_algo-1"},
                               {"Command", fmt::format("echo forged > '{}'; echo done", session_log.string())}},
                              "");
  ASSERT_VIGIL_OK(eraser.status);
  const std::string log = log_text();
  EXPECT_TRUE(has_line_with(log, {"altered: the log was truncated since its last record"})) << log;
  EXPECT_TRUE(has_line_with(agent_text(), {session_log.string(), "truncated"})) << agent_text();
  // Erased after the last record: named at the job's end.
  ASSERT_EQ(::truncate(session_log.c_str(), 0), 0);
  const auto altered = altered_session_logs();
  EXPECT_TRUE(std::any_of(altered.begin(), altered.end(), [&](const std::string& a) {
    return a.starts_with(session_log.string() + ": the log was truncated");
  })) << altered.size();
}

TEST_F(ControlServerTest, CommandSessionRunsInTheHostsEnvironment) {
  start_server();
  const auto r =
      session({{"Action", "StartSession"}, {"Target", "job_algo-2"}, {"Command", "echo $FOO; pwd; exit 3"}}, "");
  ASSERT_VIGIL_OK(r.status);
  EXPECT_EQ(*r.status, 3);
  EXPECT_EQ(r.output, "bar-value\n" + fs::canonical(workdir).string() + "\n");

  std::smatch id;
  ASSERT_TRUE(std::regex_search(r.stderr_text, id, std::regex("Starting session with SessionId: (\\S+)\n")))
      << r.stderr_text;
  const std::string session_id = id[1];
  EXPECT_TRUE(std::regex_match(session_id, std::regex(user_name_of(::getuid()) + "-[0-9a-f]{17}"))) << session_id;
  EXPECT_NE(r.stderr_text.find("Exiting session with sessionId: " + session_id + "."), std::string::npos)
      << r.stderr_text;

  const std::string log = log_text();
  EXPECT_TRUE(
      has_line_with(log, {session_id, "start", fmt::format("uid={}", ::getuid()), "user=" + user_name_of(::getuid()),
                          "target=sagemaker-training-job:job_algo-2", "pty=no"}))
      << log;
  EXPECT_TRUE(has_line_with(log, {session_id, "command: /bin/sh -c echo $FOO; pwd; exit 3"})) << log;
  EXPECT_TRUE(has_line_with(log, {session_id, "output: bar-value"})) << log;
  EXPECT_TRUE(has_line_with(log, {session_id, "end exit_status=3"})) << log;
  EXPECT_EQ(server->live_sessions(), 0u);
}

TEST_F(ControlServerTest, SessionInheritsNoFdOfTheServer) {
  start_server();
  RawClient other(socket_path);  // a connection open meanwhile: its fd is the server's, not the session's
  const int leaky = ::open("/dev/null", O_RDONLY);  // not close-on-exec, as a careless embedder's fd would be
  const auto r = session({{"Action", "StartSession"}, {"Command", "ls /proc/$$/fd"}}, "");
  ::close(leaky);
  ASSERT_VIGIL_OK(r.status);
  EXPECT_EQ(r.output, "0\n1\n2\n");
}

TEST_F(ControlServerTest, CommandSessionReadsTheClientsInputUntilItsEnd) {
  start_server();
  const auto r = session({{"Action", "StartSession"}, {"Command", "read first; echo got-$first; cat; echo done"}},
                         "hello\nrest\n");
  ASSERT_VIGIL_OK(r.status);
  EXPECT_EQ(*r.status, 0);
  EXPECT_EQ(r.output, "got-hello\nrest\ndone\n");
  EXPECT_TRUE(has_line_with(log_text(), {"input: hello"})) << log_text();
}

TEST_F(ControlServerTest, PtySessionThroughRunSession) {
  start_server();
  const auto r = session({{"Action", "StartSession"}, {"Target", "job_algo-1"}},
                         "test -t 0 && test -t 1 && echo tty-$((1+1))\necho hi-$((6*7))\nexit\n");
  ASSERT_VIGIL_OK(r.status);
  EXPECT_EQ(*r.status, 0);
  EXPECT_NE(r.output.find("hi-42"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tty-2"), std::string::npos) << r.output;  // the shell's stdin and stdout are a terminal
  const std::string log = log_text();
  EXPECT_TRUE(has_line_with(log, {"pty=yes"})) << log;
  EXPECT_TRUE(has_line_with(log, {"input: echo hi-$((6*7))"})) << log;
  EXPECT_TRUE(has_line_with(log, {"output: ", "hi-42"})) << log;
  EXPECT_TRUE(has_line_with(log, {"end exit_status=0"})) << log;
}

TEST_F(ControlServerTest, PtyTakesTheClientsSizeAndTerm) {
  start_server();
  RawClient client(socket_path);
  ASSERT_TRUE(client.connected());
  client.send_request({{"ProtocolVersion", kControlProtocolVersion},
                       {"Action", "StartSession"},
                       {"Term", "xterm-256color"},
                       {"TerminalSize", {{"Rows", 33}, {"Cols", 101}}}});
  const json reply = client.reply();
  ASSERT_TRUE(reply.value("Ok", false)) << reply.dump();
  EXPECT_TRUE(reply.value("Pty", false));
  client.send(FrameType::Input, "stty size; echo term-$TERM\n");
  EXPECT_NE(client.output_until("term-xterm-256color").find("33 101"), std::string::npos);
  client.send(FrameType::WindowSize, encode_window_size({40, 120}));
  client.send(FrameType::Input, "stty size\nexit\n");
  std::optional<int> status;
  EXPECT_NE(client.output_until("40 120", &status).find("40 120"), std::string::npos);
  if (!status) client.output_until("\x01never", &status);
  EXPECT_EQ(status, 0);
}

// The client's "Term" reaches the shell only as a terminfo name; anything else leaves the plan's TERM.
TEST_F(ControlServerTest, ClientsTermIsFilteredBeforeItReachesTheSession) {
  decide = [this](const PeerIdentity&, const json& request) -> std::expected<SessionPlan, std::string> {
    SessionPlan plan = plan_for(request);
    plan.env.push_back("TERM=xterm");
    return plan;
  };
  start_server();
  auto term_seen = [&](const json& term) {
    RawClient client(socket_path);
    EXPECT_TRUE(client.connected());
    client.send_request({{"ProtocolVersion", kControlProtocolVersion}, {"Action", "StartSession"}, {"Term", term}});
    const json reply = client.reply();
    EXPECT_TRUE(reply.value("Ok", false)) << reply.dump();
    client.send(FrameType::Input, "printf '<%s>\\n' \"$TERM\"; exit\n");
    const std::string output = client.output_until(">\r\n");
    const auto open = output.rfind('<');
    const auto close = output.rfind('>');
    return open == std::string::npos || close < open ? output : output.substr(open + 1, close - open - 1);
  };
  EXPECT_EQ(term_seen("vt100"), "vt100");
  EXPECT_EQ(term_seen("vt100\nLD_PRELOAD=/tmp/x.so"), "xterm");
  EXPECT_EQ(term_seen("$(touch /tmp/pwned)"), "xterm");
  EXPECT_EQ(term_seen(std::string(65, 'a')), "xterm");
  EXPECT_EQ(term_seen(42), "xterm");
}

// A terminal as the client's stdin (the slave of a pty this test holds the master of): raw mode
// for the session and back after it, the terminal's size at the start and after SIGWINCH, TERM.
TEST_F(ControlServerTest, InteractiveClientOnATerminal) {
  start_server();
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(terminal, 0);
  winsize ws{};
  ws.ws_row = 30;
  ws.ws_col = 90;
  ASSERT_EQ(::ioctl(master, TIOCSWINSZ, &ws), 0);
  termios before{};
  ASSERT_EQ(::tcgetattr(terminal, &before), 0);
  ASSERT_TRUE(before.c_lflag & ICANON);
  const char* saved_term = std::getenv("TERM");
  const std::string saved_term_value = saved_term ? saved_term : "";
  ::setenv("TERM", "vt100", 1);
  const fs::path out_path = scratch / "interactive.out";
  const int out = ::open(out_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  Result<int> result = -1;
  std::thread client([&] { result = run_session(socket_path, {{"Action", "StartSession"}}, terminal, out); });
  auto type = [&](std::string_view text) {
    ASSERT_EQ(::write(master, text.data(), text.size()), ssize_t(text.size()));
  };
  auto output_holds = [&](std::string_view wanted) {
    return test::read_file_if_present(out_path).find(wanted) != std::string::npos;
  };

  // Typed only once the terminal is raw: switching to raw mode flushes pending input.
  termios during{};
  EXPECT_TRUE(eventually([&] { return ::tcgetattr(terminal, &during) == 0 && !(during.c_lflag & ICANON); }));
  EXPECT_FALSE(during.c_lflag & ECHO);
  type("stty size; echo term-$TERM\n");
  EXPECT_TRUE(eventually([&] { return output_holds("term-vt100"); }));
  EXPECT_TRUE(output_holds("30 90")) << test::read_file_if_present(out_path);

  ws.ws_row = 50;
  ws.ws_col = 132;
  ASSERT_EQ(::ioctl(master, TIOCSWINSZ, &ws), 0);
  ::kill(::getpid(), SIGWINCH);  // the test's terminal is not the process's: the kernel sends no SIGWINCH
  // Asked again until the new size is there (the signal reaches the client asynchronously).
  EXPECT_TRUE(eventually([&] {
    type("stty size\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return output_holds("50 132");
  })) << test::read_file_if_present(out_path);
  type("exit 4\n");
  client.join();
  ASSERT_VIGIL_OK(result);
  EXPECT_EQ(*result, 4);
  termios after{};
  ASSERT_EQ(::tcgetattr(terminal, &after), 0);
  EXPECT_EQ(after.c_lflag, before.c_lflag);
  EXPECT_EQ(after.c_iflag, before.c_iflag);
  EXPECT_EQ(after.c_oflag, before.c_oflag);
  if (saved_term)
    ::setenv("TERM", saved_term_value.c_str(), 1);
  else
    ::unsetenv("TERM");
  ::close(out);
  ::close(terminal);
  ::close(master);
}

TEST_F(ControlServerTest, ProgramThatCannotRunIsReportedToTheClient) {
  start_server();
  decide = [this](const PeerIdentity&, const json& request) -> std::expected<SessionPlan, std::string> {
    SessionPlan plan = plan_for(request);
    plan.argv = {"/nonexistent/shell"};
    return plan;
  };
  auto r = session({{"Action", "StartSession"}}, "");
  ASSERT_FALSE(r.status.has_value());
  EXPECT_EQ(r.status.error().message, "cannot run /nonexistent/shell: No such file or directory");

  decide = [this](const PeerIdentity&, const json& request) -> std::expected<SessionPlan, std::string> {
    SessionPlan plan = plan_for(request);
    plan.cwd = workdir / "missing";
    return plan;
  };
  r = session({{"Action", "StartSession"}, {"Command", "true"}}, "");
  ASSERT_FALSE(r.status.has_value());
  EXPECT_NE(r.status.error().message.find("cannot change to the working directory"), std::string::npos)
      << r.status.error().message;
  EXPECT_NE(agent_text().find("did not start"), std::string::npos) << agent_text();
  EXPECT_EQ(server->live_sessions(), 0u);
}

TEST_F(ControlServerTest, RefusalTextReachesTheClient) {
  const std::string denial =
      "AccessDeniedException: User: alice is not authorized to perform: ssm:StartSession on resource: "
      "sagemaker-training-job:job_algo-1";
  decide = [&](const PeerIdentity&, const json&) -> std::expected<SessionPlan, std::string> {
    return std::unexpected(denial);
  };
  start_server();
  const auto r = session({{"Action", "StartSession"}, {"Target", "job_algo-1"}}, "");
  ASSERT_FALSE(r.status.has_value());
  EXPECT_EQ(r.status.error().message, denial);
  EXPECT_EQ(r.stderr_text.find("Starting session"), std::string::npos) << r.stderr_text;
  EXPECT_NE(agent_text().find(denial), std::string::npos);
}

TEST_F(ControlServerTest, HandlerExceptionIsARefusalAndALogLine) {
  decide = [](const PeerIdentity&, const json&) -> std::expected<SessionPlan, std::string> {
    throw std::runtime_error("policy store unreadable");
  };
  start_server();
  const auto r = session({{"Action", "StartSession"}}, "");
  ASSERT_FALSE(r.status.has_value());
  EXPECT_EQ(r.status.error().message, "the job's supervisor failed to decide on the session");
  EXPECT_NE(agent_text().find("policy store unreadable"), std::string::npos) << agent_text();
  // The server goes on serving.
  EXPECT_VIGIL_OK(control_request(socket_path, {{"Action", "Describe"}}));
}

TEST_F(ControlServerTest, SessionIdChosenByTheHandlerIsUsed) {
  decide = [this](const PeerIdentity&, const json& request) -> std::expected<SessionPlan, std::string> {
    SessionPlan plan = plan_for(request);
    plan.session_id = "alice-0123456789abcdef0";
    return plan;
  };
  start_server();
  const auto r = session({{"Action", "StartSession"}, {"Command", "true"}}, "");
  ASSERT_VIGIL_OK(r.status);
  EXPECT_NE(r.stderr_text.find("Starting session with SessionId: alice-0123456789abcdef0\n"), std::string::npos)
      << r.stderr_text;
  EXPECT_TRUE(has_line_with(log_text(), {"alice-0123456789abcdef0 end exit_status=0"})) << log_text();
}

// ---- control requests ----------------------------------------------------------------------------

TEST_F(ControlServerTest, OtherRequestRoundTrip) {
  start_server();
  auto reply = control_request(socket_path, {{"Action", "UpdateTrainingJob"}, {"Value", "remote debug off"}});
  ASSERT_VIGIL_OK(reply);
  EXPECT_EQ((*reply)["Ok"], true);
  EXPECT_EQ((*reply)["Echo"], "remote debug off");
  EXPECT_EQ((*reply)["Uid"], ::getuid());
  std::lock_guard lock(mu);
  EXPECT_EQ(other_peers.size(), 1u);
}

TEST_F(ControlServerTest, ProtocolVersionMismatchIsRefused) {
  start_server();
  RawClient client(socket_path);
  ASSERT_TRUE(client.connected());
  client.send_request({{"ProtocolVersion", 99}, {"Action", "DescribeTrainingJob"}});
  const json reply = client.reply();
  EXPECT_EQ(reply.value("Ok", true), false);
  EXPECT_NE(reply.value("Error", "").find("protocol version 99"), std::string::npos) << reply.dump();
  std::lock_guard lock(mu);
  EXPECT_TRUE(other_peers.empty());
}

TEST_F(ControlServerTest, OversizedFrameIsRefused) {
  start_server();
  RawClient client(socket_path);
  ASSERT_TRUE(client.connected());
  client.send_bytes(std::string{'Q', 0, 1, 0, 1});  // announces 65537 bytes
  const json reply = client.reply();
  EXPECT_EQ(reply.value("Ok", true), false);
  EXPECT_NE(reply.value("Error", "").find("65537 bytes"), std::string::npos) << reply.dump();
  EXPECT_TRUE(client.closed_by_server());
  EXPECT_NE(agent_text().find("65537 bytes"), std::string::npos) << agent_text();
}

// Issue 28, item 1: a refused request's content never reaches the agent log (a 64 KiB ProtocolVersion
// was copied whole), and a flood of refused requests writes a bounded number of lines.
TEST_F(ControlServerTest, RefusedRequestsContentStaysOutOfTheAgentLog) {
  start_server();
  RawClient client(socket_path);
  ASSERT_TRUE(client.connected());
  const std::string huge(60000, 'A');
  client.send_request({{"ProtocolVersion", huge}, {"Action", "DescribeTrainingJob"}});
  const json reply = client.reply();
  EXPECT_EQ(reply.value("Ok", true), false);
  EXPECT_EQ(reply.value("Error", "").find(std::string(100, 'A')), std::string::npos);
  EXPECT_NE(reply.value("Error", "").find("a JSON string"), std::string::npos) << reply.dump();
  ASSERT_TRUE(eventually([&] { return agent_text().find("protocol version") != std::string::npos; }));
  EXPECT_EQ(agent_text().find(std::string(100, 'A')), std::string::npos);
  EXPECT_LT(agent_text().size(), 2 * kMaxAgentLogMessage) << agent_text().size();
}

size_t line_count(const std::string& text) { return size_t(std::count(text.begin(), text.end(), '\n')); }

TEST_F(ControlServerTest, AFloodOfRefusedRequestsWritesABoundedLog) {
  start_server();
  constexpr size_t kFlood = 300;
  const std::string padding(kMaxFramePayload - 200, 'B');  // each request near the frame limit
  for (size_t i = 0; i < kFlood; ++i) {
    RawClient client(socket_path);
    ASSERT_TRUE(client.connected());
    client.send_request({{"ProtocolVersion", 99}, {"Pad", padding}});
    (void)client.reply();
  }
  server.reset();  // its last line: the count of what was left out
  const std::string text = agent_text();
  // One minute may turn during the flood: two minutes' lines and their counts at most.
  EXPECT_LE(line_count(text), 2 * (kAgentLogLinesPerMinute + 1)) << text.size();
  EXPECT_LE(text.size(), 2 * (kAgentLogLinesPerMinute + 1) * (kMaxAgentLogMessage + 200));
  EXPECT_TRUE(has_line_with(text, {"not logged since the last line", "messages over"})) << text;
}

TEST_F(ControlServerTest, AgentLogIsRotatedAtItsCap) {
  const std::string old_text(kMaxAgentLogBytes, 'o');
  std::ofstream(agent_log, std::ios::binary) << old_text;
  start_server();
  RawClient client(socket_path);
  ASSERT_TRUE(client.connected());
  client.send_bytes("Z");  // a bad frame: one line
  (void)client.reply();
  ASSERT_TRUE(eventually([&] { return agent_text().find("bad frame") != std::string::npos; }));
  EXPECT_LT(agent_text().size(), kMaxAgentLogMessage + 200);
  fs::path previous = agent_log;
  previous += ".1";
  EXPECT_EQ(test::read_file_if_present(previous), old_text);
}

TEST_F(ControlServerTest, SilentClientIsDroppedWhileAnotherIsServed) {
  request_timeout = std::chrono::milliseconds(300);
  start_server();
  RawClient silent(socket_path);
  ASSERT_TRUE(silent.connected());
  auto reply = control_request(socket_path, {{"Action", "Describe"}, {"Value", 1}});
  ASSERT_VIGIL_OK(reply);
  EXPECT_EQ((*reply)["Echo"], 1);
  const json dropped = silent.reply();
  EXPECT_EQ(dropped.value("Ok", true), false);
  EXPECT_TRUE(silent.closed_by_server());
  EXPECT_NE(agent_text().find("no request within"), std::string::npos) << agent_text();
}

TEST_F(ControlServerTest, WaitingConnectionsBeyondTheLimitAreRefused) {
  start_server();
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 16; ++i) {
    silent.push_back(std::make_unique<RawClient>(socket_path));
    ASSERT_TRUE(silent.back()->connected());
  }
  RawClient one_more(socket_path);
  ASSERT_TRUE(one_more.connected());
  const json reply = one_more.reply();
  EXPECT_EQ(reply.value("Ok", true), false);
  EXPECT_NE(reply.value("Error", "").find("busy"), std::string::npos) << reply.dump();
  silent.clear();  // their connections end: the server serves again
  EXPECT_TRUE(eventually([&] { return control_request(socket_path, {{"Action", "Describe"}}).has_value(); }));
}

TEST_F(ControlServerTest, LyingClientGetsItsRealIdentity) {
  decide = [](const PeerIdentity&, const json&) -> std::expected<SessionPlan, std::string> {
    return std::unexpected<std::string>("AccessDeniedException: no");
  };
  start_server();
  RawClient liar(socket_path);
  ASSERT_TRUE(liar.connected());
  liar.send_request({{"ProtocolVersion", kControlProtocolVersion},
                     {"Action", "StartSession"},
                     {"Target", "job_algo-1"},
                     {"User", "root"},
                     {"UserName", "root"},
                     {"Uid", ::getuid() + 4242},
                     {"Gid", ::getgid() + 4242},
                     {"Pid", 1}});
  EXPECT_EQ(liar.reply().value("Error", ""), "AccessDeniedException: no");
  std::lock_guard lock(mu);
  ASSERT_EQ(session_peers.size(), 1u);
  EXPECT_EQ(session_peers[0].uid, ::getuid());
  EXPECT_EQ(session_peers[0].gid, ::getgid());
  EXPECT_EQ(session_peers[0].pid, ::getpid());
  EXPECT_EQ(session_peers[0].user_name, user_name_of(::getuid()));
}

TEST_F(ControlServerTest, SessionsBeyondTheLimitAreRefused) {
  start_server();
  std::vector<std::unique_ptr<RawClient>> clients;
  for (size_t i = 0; i < kMaxLiveSessions; ++i) {
    clients.push_back(std::make_unique<RawClient>(socket_path));
    ASSERT_TRUE(clients.back()->connected());
    clients.back()->send_request(
        {{"ProtocolVersion", kControlProtocolVersion}, {"Action", "StartSession"}, {"Command", "exec sleep 100"}});
    ASSERT_EQ(clients.back()->reply().value("Ok", false), true) << i;
  }
  EXPECT_EQ(server->live_sessions(), kMaxLiveSessions);
  const auto refused = session({{"Action", "StartSession"}, {"Command", "true"}}, "");
  ASSERT_FALSE(refused.status.has_value());
  EXPECT_NE(refused.status.error().message.find("too many sessions"), std::string::npos)
      << refused.status.error().message;
  // Control requests still get through.
  EXPECT_VIGIL_OK(control_request(socket_path, {{"Action", "Describe"}}));

  server->end_sessions("test over");
  EXPECT_EQ(server->live_sessions(), 0u);
  for (auto& c : clients) {
    auto frame = c->next();
    ASSERT_TRUE(frame.has_value());
    EXPECT_EQ(frame->type, FrameType::Close);
    EXPECT_EQ(frame->payload, "test over");
  }
}

// ---- how sessions end ---------------------------------------------------------------------------

TEST_F(ControlServerTest, EndSessionsEndsARunningSession) {
  start_server();
  const fs::path pid_file = scratch / "session.pid";
  int in[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);  // kept open: the session never sees the end of its input
  const int out = ::open((scratch / "out").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  Result<int> result = 0;
  std::thread client([&] {
    result = run_session(
        socket_path,
        {{"Action", "StartSession"}, {"Command", fmt::format("echo $$ > {}; exec sleep 100", pid_file.string())}},
        in[0], out);
  });
  pid_t pid = 0;
  const bool running = eventually([&] {
    pid = std::atoi(test::read_file_if_present(pid_file).c_str());
    return pid > 0 && server->live_sessions() == 1;
  });
  EXPECT_TRUE(running);
  server->end_sessions("training job Completed");
  client.join();
  ::close(in[0]);
  ::close(in[1]);
  ::close(out);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ErrorCode::Cancelled);
  EXPECT_EQ(result.error().message, "training job Completed");
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(process_gone(pid));
  EXPECT_EQ(server->live_sessions(), 0u);
  EXPECT_TRUE(has_line_with(log_text(), {"end ended: training job Completed"})) << log_text();
}

TEST_F(ControlServerTest, ClientDisconnectHangsUpTheSession) {
  start_server();
  const fs::path pid_file = scratch / "session.pid";
  RawClient client(socket_path);
  ASSERT_TRUE(client.connected());
  client.send_request({{"ProtocolVersion", kControlProtocolVersion},
                       {"Action", "StartSession"},
                       {"Command", fmt::format("echo $$ > {}; exec sleep 100", pid_file.string())}});
  ASSERT_EQ(client.reply().value("Ok", false), true);
  pid_t pid = 0;
  ASSERT_TRUE(eventually([&] { return (pid = std::atoi(test::read_file_if_present(pid_file).c_str())) > 0; }));
  client.close();
  EXPECT_TRUE(eventually([&] { return server->live_sessions() == 0; }));
  EXPECT_TRUE(eventually([&] { return process_gone(pid); }));
  EXPECT_TRUE(eventually([&] { return has_line_with(log_text(), {"end ended: the client disconnected"}); }))
      << log_text();
}

TEST_F(ControlServerTest, DestroyingTheServerEndsSessionsAndRemovesTheSocket) {
  start_server();
  RawClient client(socket_path);
  client.send_request(
      {{"ProtocolVersion", kControlProtocolVersion}, {"Action", "StartSession"}, {"Command", "exec sleep 100"}});
  ASSERT_EQ(client.reply().value("Ok", false), true);
  ASSERT_TRUE(fs::exists(socket_path));
  server.reset();
  EXPECT_FALSE(fs::exists(fs::symlink_status(socket_path)));
  auto frame = client.next();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->type, FrameType::Close);
  EXPECT_EQ(frame->payload, "the job's supervisor is stopping");
}

// ---- the socket's folder and modes ----------------------------------------------------------------

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode;
}

TEST_F(ControlServerTest, FolderAndSocketModes) {
  start_server(false);
  EXPECT_EQ(mode_of(socket_path.parent_path()) & 07777, 0700u);
  EXPECT_TRUE(S_ISSOCK(mode_of(socket_path)));
  EXPECT_EQ(mode_of(socket_path) & 07777, 0600u);
  server.reset();

  socket_path = scratch / "shared" / "control.sock";
  start_server(true);
  EXPECT_EQ(mode_of(socket_path.parent_path()) & 07777, 0711u);
  EXPECT_EQ(mode_of(socket_path) & 07777, 0666u);
}

TEST_F(ControlServerTest, FolderThatIsASymlinkIsRefused) {
  fs::create_directory(scratch / "real");
  fs::permissions(scratch / "real", fs::perms::owner_all, fs::perm_options::replace);
  fs::create_directory_symlink(scratch / "real", scratch / "link");
  auto started = ControlServer::start(scratch / "link" / "control.sock", false, handlers());
  ASSERT_FALSE(started.has_value());
  EXPECT_NE(started.error().message.find("symbolic link"), std::string::npos) << started.error().message;
  EXPECT_FALSE(fs::exists(scratch / "real" / "control.sock"));
}

TEST_F(ControlServerTest, FolderOwnedByAnotherUserIsRefused) {
  fs::path folder = scratch / "foreign";
  uid_t owner = kNobody;
  if (::geteuid() == 0) {
    ASSERT_EQ(::mkdir(folder.c_str(), 0700), 0);
    ASSERT_EQ(::chown(folder.c_str(), kNobody, kNobody), 0);
  } else {
    folder = "/";  // root's: another user's for this process
    owner = 0;
  }
  const mode_t before = mode_of(folder);
  auto started = ControlServer::start(folder / "control.sock", false, handlers());
  ASSERT_FALSE(started.has_value());
  EXPECT_NE(started.error().message.find(fmt::format("owned by uid {}", owner)), std::string::npos)
      << started.error().message;
  EXPECT_EQ(mode_of(folder), before);  // nothing of it changed
}

TEST_F(ControlServerTest, FolderWithAnotherModeIsRefused) {
  const fs::path folder = scratch / "open";
  ASSERT_EQ(::mkdir(folder.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(folder.c_str(), 0755), 0);
  auto started = ControlServer::start(folder / "control.sock", false, handlers());
  ASSERT_FALSE(started.has_value());
  EXPECT_NE(started.error().message.find("has mode 0755, not 0700"), std::string::npos) << started.error().message;
  EXPECT_EQ(mode_of(folder) & 07777, 0755u);

  ASSERT_EQ(::chmod(folder.c_str(), 0700), 0);  // private, but others were to be allowed
  started = ControlServer::start(folder / "control.sock", true, handlers());
  ASSERT_FALSE(started.has_value());
  EXPECT_NE(started.error().message.find("not 0711"), std::string::npos) << started.error().message;
}

TEST_F(ControlServerTest, StaleSocketIsReplacedAndALiveOneIsNot) {
  ASSERT_EQ(::mkdir(socket_path.parent_path().c_str(), 0700), 0);
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ::close(fd);  // bound, never listened on: what a crashed supervisor leaves
  }
  auto stale = control_request(socket_path, {{"Action", "Describe"}});
  ASSERT_FALSE(stale.has_value());
  EXPECT_NE(stale.error().message.find("does not answer"), std::string::npos) << stale.error().message;

  start_server();
  EXPECT_VIGIL_OK(control_request(socket_path, {{"Action", "Describe"}}));
  auto second = ControlServer::start(socket_path, false, handlers());
  ASSERT_FALSE(second.has_value());
  EXPECT_NE(second.error().message.find("another server is listening"), std::string::npos) << second.error().message;
  EXPECT_VIGIL_OK(control_request(socket_path, {{"Action", "Describe"}}));  // the first one still serves
}

TEST_F(ControlServerTest, MissingSocketIsNamedInTheError) {
  auto r = control_request(scratch / "nowhere" / "control.sock", {{"Action", "Describe"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("no control socket at " + (scratch / "nowhere" / "control.sock").string()),
            std::string::npos)
      << r.error().message;
}

// ---- other users (root only: switching users needs it) ----------------------------------------------

// In a child that dropped to `uid` (its gid the same number): a control request; the reply (or the
// error's message) and whether it succeeded.
std::pair<std::string, bool> request_as(uid_t uid, const fs::path& socket_path) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {"pipe failed", false};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string text = "cannot switch users";
    bool ok = false;
    if (::setgroups(0, nullptr) == 0 && ::setgid(uid) == 0 && ::setuid(uid) == 0) {
      auto reply = control_request(socket_path, {{"Action", "Describe"}});
      ok = reply.has_value();
      text = ok ? reply->dump() : reply.error().message;
    }
    [[maybe_unused]] ssize_t ignored = ::write(pipe_fds[1], text.data(), text.size());
    ::_exit(ok ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0;) text.append(chunk, size_t(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {text, WIFEXITED(status) && WEXITSTATUS(status) == 0};
}

std::pair<std::string, bool> request_as_nobody(const fs::path& socket_path) { return request_as(kNobody, socket_path); }

// A child of uid `uid` that connects `count` times to the socket and holds the connections until
// release() (or the object's end): how a local user keeps the socket's slots busy.
class HeldConnections {
 public:
  HeldConnections(uid_t uid, const fs::path& socket_path, int count) {
    int ready[2], hold[2];
    if (::pipe(ready) != 0 || ::pipe(hold) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(hold[1]);
      if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(2);
      std::vector<std::unique_ptr<RawClient>> held;
      for (int i = 0; i < count; ++i) held.push_back(std::make_unique<RawClient>(socket_path));
      char connected = char(std::count_if(held.begin(), held.end(), [](const auto& c) { return c->connected(); }));
      [[maybe_unused]] ssize_t w = ::write(ready[1], &connected, 1);
      char byte;
      [[maybe_unused]] ssize_t r = ::read(hold[0], &byte, 1);  // until the parent closes its end
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(hold[0]);
    hold_fd_ = hold[1];
    char connected = 0;
    if (::read(ready[0], &connected, 1) == 1) connected_ = connected;
    ::close(ready[0]);
  }
  ~HeldConnections() { release(); }
  int connected() const { return connected_; }
  void release() {
    if (hold_fd_ >= 0) ::close(hold_fd_);
    hold_fd_ = -1;
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int hold_fd_ = -1;
  int connected_ = 0;
};

// Issue 28, items 1 and 6: a uid the access policy never names is closed at accept, answered nothing
// and logged nothing of its own.
TEST_F(ControlServerTest, UnnamedUserIsClosedAtAcceptWithoutALogLine) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  fs::permissions(scratch.path(), fs::perms(0711), fs::perm_options::replace);
  auto h = handlers();
  h.admits = [](uid_t uid) { return uid != kNobody; };
  auto started = ControlServer::start(socket_path, true, std::move(h));
  ASSERT_VIGIL_OK(started);
  server = std::move(*started);
  const auto [text, ok] = request_as_nobody(socket_path);
  EXPECT_FALSE(ok) << text;
  EXPECT_NE(text.find("closed the connection without answering: the job's access policy allows your user (uid 65534) "
                      "nothing"),
            std::string::npos)
      << text;
  {
    std::lock_guard lock(mu);
    EXPECT_TRUE(other_peers.empty());
  }
  EXPECT_EQ(agent_text().find("65534"), std::string::npos) << agent_text();
  EXPECT_TRUE(request_as(kNobody - 1, socket_path).second);  // a named user is served
}

// Issue 28, item 6: one user holding idle connections (renewed as they time out) kept the socket busy
// for everyone; now it holds its own few slots, and the owner and other users are served.
TEST_F(ControlServerTest, OneUsersIdleConnectionsBlockNeitherTheOwnerNorAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  fs::permissions(scratch.path(), fs::perms(0711), fs::perm_options::replace);
  start_server(true);
  HeldConnections held(kNobody, socket_path, int(kMaxWaitingConnections));
  ASSERT_EQ(held.connected(), int(kMaxWaitingConnections));
  HeldConnections more(kNobody - 2, socket_path, int(kMaxSlotsPerOtherUser));  // a second user's share
  ASSERT_EQ(more.connected(), int(kMaxSlotsPerOtherUser));
  auto owner = control_request(socket_path, {{"Action", "Describe"}, {"Value", 7}});
  ASSERT_VIGIL_OK(owner);
  EXPECT_EQ((*owner)["Echo"], 7);
  const auto [text, ok] = request_as(kNobody - 1, socket_path);
  EXPECT_TRUE(ok) << text;
}

// Issue 28, item 15: with $XDG_RUNTIME_DIR set (a 0700 folder of the owner's), a job that grants other
// users puts its socket where they can reach it; a job that grants no one keeps it private.
TEST_F(ControlServerTest, SocketOfAJobThatGrantsOthersIsReachableWithARuntimeDir) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  const fs::path runtime = scratch / "runtime";
  fs::create_directories(runtime);
  fs::permissions(runtime, fs::perms(0700), fs::perm_options::replace);
  fs::permissions(scratch.path(), fs::perms(0711), fs::perm_options::replace);
  const char* saved = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved_value = saved ? saved : "";
  ::setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);
  const fs::path private_path = new_job_socket_path(false);
  const fs::path shared_path = new_job_socket_path(true);
  saved ? ::setenv("XDG_RUNTIME_DIR", saved_value.c_str(), 1) : ::unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(private_path.parent_path().parent_path(), runtime);
  EXPECT_NE(shared_path.string().find(runtime.string()), 0u) << shared_path;
  {
    auto started = ControlServer::start(shared_path, true, handlers());
    ASSERT_VIGIL_OK(started);
    server = std::move(*started);
    const auto [text, ok] = request_as_nobody(shared_path);
    EXPECT_TRUE(ok) << text;
    server.reset();
    fs::remove(shared_path.parent_path());
  }
}

// Issue 28, item 15: where a folder on the way is closed to the user, the error names it.
TEST_F(ControlServerTest, ClosedFolderOnTheWayIsNamedInTheError) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  const fs::path closed = scratch / "closed";
  fs::create_directories(closed);
  fs::permissions(closed, fs::perms(0700), fs::perm_options::replace);
  fs::permissions(scratch.path(), fs::perms(0711), fs::perm_options::replace);
  const fs::path path = closed / "ctl" / "control.sock";
  auto started = ControlServer::start(path, true, handlers());
  ASSERT_VIGIL_OK(started);
  server = std::move(*started);
  const auto [text, ok] = request_as_nobody(path);
  EXPECT_FALSE(ok);
  EXPECT_NE(text.find("the folder " + closed.string() + " (uid 0, mode 0700) is closed to your user (uid 65534)"),
            std::string::npos)
      << text;
}

TEST_F(ControlServerTest, OtherUserCannotReachAPrivateSocket) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  fs::permissions(scratch.path(), fs::perms(0711), fs::perm_options::replace);  // the scratch folder is traversable
  start_server(false);
  const auto [text, ok] = request_as_nobody(socket_path);
  EXPECT_FALSE(ok);
  EXPECT_NE(text.find("not allowed to reach the job's control socket " + socket_path.string()), std::string::npos)
      << text;
  std::lock_guard lock(mu);
  EXPECT_TRUE(other_peers.empty());
}

TEST_F(ControlServerTest, OtherUserReachesASharedSocketAsItself) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to switch users";
  fs::permissions(scratch.path(), fs::perms(0711), fs::perm_options::replace);
  start_server(true);
  const auto [text, ok] = request_as_nobody(socket_path);
  EXPECT_TRUE(ok) << text;
  std::lock_guard lock(mu);
  ASSERT_EQ(other_peers.size(), 1u);
  EXPECT_EQ(other_peers[0].uid, kNobody);
  EXPECT_EQ(other_peers[0].gid, kNobody);
}

}  // namespace
}  // namespace vigil::remote_debug
