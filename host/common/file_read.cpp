#include "common/file_read.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vigil {

Result<std::string> read_all(int fd, const std::string& path) {
  std::string bytes;
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::io(path, std::strerror(errno)));
    if (n == 0) return bytes;
    bytes.append(chunk, size_t(n));
  }
}

Result<std::string> read_whole_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(Error::io(path.string(), std::strerror(errno)));
  auto bytes = read_all(fd, path.string());
  ::close(fd);
  return bytes;
}

}  // namespace vigil
