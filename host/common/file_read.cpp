#include "common/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/os.h"

namespace vigil {

Result<std::string> read_all(int fd, const std::string& path, uint64_t size_hint) {
  // One byte more than the expected size: a read that fills the buffer means the file grew (or the
  // size was unknown), so the buffer doubles and reading goes on to the end.
  std::string bytes(size_t(size_hint) + 1, '\0');
  size_t done = 0;
  while (true) {
    const os::IoOutcome got = os::read_some(fd, std::span(bytes).subspan(done));
    if (!got.ok()) return fail(Error::io(path, std::strerror(got.error)));
    if (got.bytes == 0) break;
    const size_t asked = bytes.size() - done;
    done += got.bytes;
    if (done == bytes.size()) bytes.resize(bytes.size() * 2);
    // A short read that stops at the expected size is the end of a regular file: no second read
    // for the end-of-file answer (one system call fewer per index file).
    else if (size_hint > 0 && got.bytes < asked && done == size_hint) break;
  }
  bytes.resize(done);
  return bytes;
}

Result<std::string> read_whole_file(const std::filesystem::path& path) {
  const os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail(Error::io(path.string(), std::strerror(errno)));
  struct stat st {};
  const uint64_t size = ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) ? uint64_t(st.st_size) : 0;
  return read_all(fd.get(), path.string(), size);
}

Result<std::string> read_regular_file(const std::filesystem::path& path) {
  const os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ELOOP) return fail(Error::invalid_argument(path.string() + ": not a regular file (a symbolic link)"));
    return fail(Error::io(path.string(), std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(Error::io(path.string(), std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return fail(Error::invalid_argument(path.string() + ": not a regular file"));
  return read_all(fd.get(), path.string(), uint64_t(st.st_size));
}

}  // namespace vigil
