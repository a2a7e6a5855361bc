#include "common/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vigil {

Result<std::string> read_all(int fd, const std::string& path, uint64_t size_hint) {
  // One byte more than the expected size: a read that fills the buffer means the file grew (or the
  // size was unknown), so the buffer doubles and reading goes on to the end.
  std::string bytes(size_t(size_hint) + 1, '\0');
  size_t done = 0;
  while (true) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::io(path, std::strerror(errno)));
    if (n == 0) break;
    done += size_t(n);
    if (done == bytes.size()) bytes.resize(bytes.size() * 2);
  }
  bytes.resize(done);
  return bytes;
}

Result<std::string> read_whole_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(Error::io(path.string(), std::strerror(errno)));
  struct stat st {};
  const uint64_t size = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? uint64_t(st.st_size) : 0;
  auto bytes = read_all(fd, path.string(), size);
  ::close(fd);
  return bytes;
}

}  // namespace vigil
