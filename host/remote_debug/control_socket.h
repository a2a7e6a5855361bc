// The job's control socket on the file system: the folder it lives in (created by the server, or
// checked when it exists), the stale socket of an earlier run, the listening socket's modes, and
// the addresses both sides connect to. The security rules are control_server.h's.
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <filesystem>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/os.h"

namespace vigil::remote_debug {

// A listening control socket. Owns its fds; remove() (or the destructor) closes them and unlinks
// the socket file when it is still the one this object bound.
class ListeningSocket {
 public:
  // The folder (socket_path's parent): created 0700 (0711 with allow_other_users) when missing,
  // otherwise it must be a real folder owned by this process's euid with exactly that mode.
  // Then the socket (0600, or 0666 with allow_other_users) is bound, replacing a stale socket of
  // ours; a socket another server still listens on is refused. The fd is non-blocking, close-on-exec.
  [[nodiscard]] static Result<ListeningSocket> open(const std::filesystem::path& socket_path, bool allow_other_users);
  ListeningSocket() = default;  // listens on nothing
  ListeningSocket(ListeningSocket&& other) noexcept;
  ListeningSocket& operator=(ListeningSocket&& other) noexcept;
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;
  ~ListeningSocket();

  int fd() const { return fd_.get(); }
  const std::filesystem::path& path() const { return path_; }
  void remove() noexcept;

 private:
  os::UniqueFd fd_;
  os::UniqueFd dir_fd_;  // the checked folder, for binding and unlinking through it, not through the path again
  std::filesystem::path path_;
  std::string name_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// Where a new job's control socket goes: "<base>/vigil-job-<16 random hex digits>/control.sock", short
// (sun_path holds 107 bytes) and named at random so that nobody prepares the folder in advance. The
// base is $XDG_RUNTIME_DIR when it is a folder, else /tmp; but /tmp whenever `allow_other_users`:
// the runtime folder is its user's alone (0700), where no granted user could ever reach the socket.
[[nodiscard]] std::filesystem::path new_job_socket_path(bool allow_other_users);

// An AF_UNIX address naming `path`; nullopt when the path is too long for sun_path.
[[nodiscard]] std::optional<std::pair<sockaddr_un, socklen_t>> unix_address(const std::string& path);

}  // namespace vigil::remote_debug
