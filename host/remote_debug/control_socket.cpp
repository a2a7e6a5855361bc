#include "remote_debug/control_socket.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>

#include <fmt/format.h>

namespace vigil::remote_debug {

namespace fs = std::filesystem;

namespace {

Error refused(const fs::path& what, std::string_view why) {
  return Error{.code = ErrorCode::Io, .message = fmt::format("control socket folder {}: {}", what.string(), why)};
}

std::string errno_text(int err) { return std::strerror(err); }

// The folder, opened without following a symbolic link as its last component; created when missing.
Result<os::UniqueFd> open_socket_folder(const fs::path& dir, mode_t mode) {
  bool created = false;
  os::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd && errno == ENOENT) {
    if (::mkdir(dir.c_str(), mode) == 0)
      created = true;
    else if (errno != EEXIST)
      return fail(refused(dir, fmt::format("cannot create it: {}", errno_text(errno))));
    fd.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!fd) {
    const int err = errno;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      return fail(refused(dir, "is a symbolic link, not a folder"));
    if (err == ENOTDIR || (::lstat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)))
      return fail(refused(dir, "exists and is not a folder"));
    return fail(refused(dir, fmt::format("cannot open it: {}", errno_text(err))));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    const int err = errno;
    return fail(refused(dir, fmt::format("cannot inspect it: {}", errno_text(err))));
  }
  if (st.st_uid != ::geteuid()) {
    return fail(refused(dir, fmt::format("is owned by uid {}, not by this process's user (uid {}): refusing to use it",
                                         st.st_uid, ::geteuid())));
  }
  // Ours and new: the umask may have taken bits the mode needs. Anything else keeps its mode.
  if (created && (st.st_mode & 07777) != mode) {
    if (::fchmod(fd.get(), mode) != 0) {
      const int err = errno;
      return fail(refused(dir, fmt::format("cannot set its mode: {}", errno_text(err))));
    }
    st.st_mode = (st.st_mode & ~mode_t(07777)) | mode;
  }
  if ((st.st_mode & 07777) != mode) {
    return fail(refused(dir, fmt::format("has mode {:04o}, not {:04o}: refusing to use it", st.st_mode & 07777, mode)));
  }
  return fd;
}

// "/proc/self/fd/N/name": the socket reached through the folder already checked, so that a folder
// swapped under the path after the check is never the one bound (and long paths fit sun_path).
std::string through_folder(int dir_fd, const std::string& name) {
  return fmt::format("/proc/self/fd/{}/{}", dir_fd, name);
}

// Whether a server answers on the socket `name` in the folder.
bool someone_listens(int dir_fd, const std::string& name) {
  auto address = unix_address(through_folder(dir_fd, name));
  if (!address) return false;
  const os::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return fd && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address->first), address->second) == 0;
}

}  // namespace

fs::path new_job_socket_path(bool allow_other_users) {
  fs::path base = "/tmp";
  std::error_code ec;
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR");
      !allow_other_users && runtime && *runtime && fs::is_directory(runtime, ec))
    base = runtime;
  std::random_device device;
  return base / fmt::format("vigil-job-{:08x}{:08x}", device(), device()) / "control.sock";
}

std::optional<std::pair<sockaddr_un, socklen_t>> unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path) return std::nullopt;
  std::memcpy(address.sun_path, path.data(), path.size());
  return std::pair{address, socklen_t(offsetof(sockaddr_un, sun_path) + path.size() + 1)};
}

Result<ListeningSocket> ListeningSocket::open(const fs::path& socket_path, bool allow_other_users) {
  const fs::path absolute = socket_path.is_absolute() ? socket_path : fs::absolute(socket_path);
  const fs::path dir = absolute.parent_path();
  const std::string name = absolute.filename().string();
  if (name.empty() || name == "." || name == "..")
    return fail(
        Error::invalid_argument(fmt::format("control socket {}: the path names no file", socket_path.string())));
  auto dir_fd = open_socket_folder(dir, allow_other_users ? 0711 : 0700);
  if (!dir_fd) return fail(dir_fd.error());
  ListeningSocket out;
  out.dir_fd_ = std::move(*dir_fd);
  out.path_ = absolute;
  out.name_ = name;
  auto socket_error = [&](std::string_view what) {
    return Error{.code = ErrorCode::Io, .message = fmt::format("control socket {}: {}", absolute.string(), what)};
  };

  struct stat st {};
  if (::fstatat(out.dir_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid())
      return fail(socket_error("exists and is not a socket of this process's user: refusing to replace it"));
    if (someone_listens(out.dir_fd_.get(), name)) return fail(socket_error("another server is listening on it"));
    if (::unlinkat(out.dir_fd_.get(), name.c_str(), 0) != 0 && errno != ENOENT)
      return fail(socket_error(fmt::format("cannot remove the stale socket: {}", errno_text(errno))));
  } else if (errno != ENOENT) {
    return fail(socket_error(fmt::format("cannot inspect it: {}", errno_text(errno))));
  }

  auto address = unix_address(through_folder(out.dir_fd_.get(), name));
  if (!address) return fail(socket_error("the socket's name is too long"));
  out.fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!out.fd_) return fail(socket_error(fmt::format("cannot create a socket: {}", errno_text(errno))));
  if (::bind(out.fd_.get(), reinterpret_cast<const sockaddr*>(&address->first), address->second) != 0)
    return fail(socket_error(fmt::format("cannot bind: {}", errno_text(errno))));
  if (::fstatat(out.dir_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return fail(socket_error(fmt::format("cannot inspect it: {}", errno_text(errno))));
  out.dev_ = st.st_dev;  // from here a failure removes the file again
  out.ino_ = st.st_ino;
  // Before listen(): until then a connect() is refused, whatever the mode the umask gave.
  if (::fchmodat(out.dir_fd_.get(), name.c_str(), allow_other_users ? 0666 : 0600, 0) != 0)
    return fail(socket_error(fmt::format("cannot set its mode: {}", errno_text(errno))));
  if (::listen(out.fd_.get(), 64) != 0) return fail(socket_error(fmt::format("cannot listen: {}", errno_text(errno))));
  return out;
}

ListeningSocket::ListeningSocket(ListeningSocket&& other) noexcept
    : fd_(std::move(other.fd_)),
      dir_fd_(std::move(other.dir_fd_)),
      path_(std::move(other.path_)),
      name_(std::move(other.name_)),
      dev_(other.dev_),
      ino_(other.ino_) {}

ListeningSocket& ListeningSocket::operator=(ListeningSocket&& other) noexcept {
  if (this != &other) {
    remove();
    fd_ = std::move(other.fd_);
    dir_fd_ = std::move(other.dir_fd_);
    path_ = std::move(other.path_);
    name_ = std::move(other.name_);
    dev_ = other.dev_;
    ino_ = other.ino_;
  }
  return *this;
}

ListeningSocket::~ListeningSocket() { remove(); }

void ListeningSocket::remove() noexcept {
  if (fd_) {
    // Only the socket this object bound: a later server's socket under the same name stays.
    struct stat st {};
    if (ino_ != 0 && ::fstatat(dir_fd_.get(), name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == dev_ &&
        st.st_ino == ino_)
      ::unlinkat(dir_fd_.get(), name_.c_str(), 0);
    fd_.reset();
  }
  dir_fd_.reset();
}

}  // namespace vigil::remote_debug
