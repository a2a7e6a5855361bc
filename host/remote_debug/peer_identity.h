// Who is at the other end of a connected Unix socket, as the kernel says (SO_PEERCRED): the one
// source of a peer's identity for the job's control socket. Nothing a client writes about itself
// is ever trusted instead.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/error.h"

namespace vigil::remote_debug {

struct PeerIdentity {
  pid_t pid = -1;         // the peer's process at connect() time
  uid_t uid = uid_t(-1);  // its effective user id at connect() time
  gid_t gid = gid_t(-1);  // its effective group id at connect() time
  // The passwd name of `uid` (getpwuid_r); the uid in decimal when the user database has none
  // (containers often run uids without a passwd entry).
  std::string user_name;
};

// The credentials of the process that connected `connected_fd` (an AF_UNIX stream socket returned by
// accept() or connect()). The fd stays the caller's.
[[nodiscard]] Result<PeerIdentity> peer_identity(int connected_fd);

// The same without the user name (left empty): no user database lookup, which may be slow (NSS), so
// fit for deciding at accept() whether to keep a connection at all.
[[nodiscard]] Result<PeerIdentity> peer_credentials(int connected_fd);

// The passwd name of `uid`, or the uid in decimal where there is none.
[[nodiscard]] std::string user_name_of(uid_t uid);

}  // namespace vigil::remote_debug
