#include "remote_debug/peer_identity.h"

#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace vigil::remote_debug {

std::string user_name_of(uid_t uid) {
  long hint = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(hint > 0 ? size_t(hint) : 1024);
  // Grows on ERANGE: entries with long fields do not fit the hint; 1 MiB is far beyond any real one.
  while (buffer.size() <= (size_t(1) << 20)) {
    passwd entry{};
    passwd* found = nullptr;
    const int err = ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found);
    if (err == ERANGE) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (err == 0 && found != nullptr && found->pw_name != nullptr && found->pw_name[0] != '\0') return found->pw_name;
    break;
  }
  return std::to_string(uid);
}

Result<PeerIdentity> peer_credentials(int connected_fd) {
  ucred cred{};
  socklen_t length = sizeof cred;
  if (::getsockopt(connected_fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0)
    return fail(
        Error{.code = ErrorCode::Io,
              .message = fmt::format("cannot read the peer's credentials (SO_PEERCRED): {}", std::strerror(errno))});
  if (length != sizeof cred || cred.pid <= 0)
    return fail(Error{.code = ErrorCode::Io,
                      .message = "the kernel gave no credentials for the peer (not a connected Unix socket)"});
  return PeerIdentity{.pid = cred.pid, .uid = cred.uid, .gid = cred.gid};
}

Result<PeerIdentity> peer_identity(int connected_fd) {
  auto peer = peer_credentials(connected_fd);
  if (peer) peer->user_name = user_name_of(peer->uid);
  return peer;
}

}  // namespace vigil::remote_debug
