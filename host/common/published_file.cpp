#include "common/published_file.h"

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/os.h"

namespace vigil {
namespace {

Error write_error(const std::filesystem::path& path, int err) { return Error::io_write(path.string(), std::strerror(err)); }

}  // namespace

Result<PublishedFile> PublishedFile::create(std::filesystem::path final_path, std::filesystem::path tmp_path,
                                            mode_t mode) {
  PublishedFile f;
  f.final_ = std::move(final_path);
  f.tmp_ = std::move(tmp_path);
  f.fd_ = ::open(f.tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (f.fd_ < 0) return fail(write_error(f.tmp_, errno));
  return f;
}

PublishedFile::PublishedFile(PublishedFile&& other) noexcept
    : final_(std::move(other.final_)), tmp_(std::move(other.tmp_)), fd_(std::exchange(other.fd_, -1)) {}

PublishedFile& PublishedFile::operator=(PublishedFile&& other) noexcept {
  if (this != &other) {
    discard();
    final_ = std::move(other.final_);
    tmp_ = std::move(other.tmp_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

PublishedFile::~PublishedFile() { discard(); }

void PublishedFile::discard() noexcept {
  if (fd_ >= 0) {
    ::close(std::exchange(fd_, -1));
    ::unlink(tmp_.c_str());
  }
}

Result<void> PublishedFile::write(std::string_view bytes) {
  iovec part{const_cast<char*>(bytes.data()), bytes.size()};
  return write_parts({&part, 1});
}

Result<void> PublishedFile::write_parts(std::span<iovec> parts) {
  if (fd_ < 0) return fail(Error::internal(fmt::format("{} is already closed", tmp_.string())));
  if (const auto wrote = os::write_all(fd_, parts); !wrote.ok()) return fail(write_error(tmp_, wrote.error));
  return {};
}

Result<void> PublishedFile::publish() {
  if (fd_ < 0) return fail(Error::internal(fmt::format("{} is already closed", tmp_.string())));
  if (::close(std::exchange(fd_, -1)) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return fail(write_error(tmp_, err));
  }
  if (::rename(tmp_.c_str(), final_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return fail(write_error(final_, err));
  }
  return {};
}

Result<void> PublishedFile::publish_as(std::filesystem::path final_path) {
  final_ = std::move(final_path);
  return publish();
}

Result<void> publish_file(const std::filesystem::path& final_path, const std::filesystem::path& tmp_path,
                          std::string_view content, mode_t mode) {
  auto file = PublishedFile::create(final_path, tmp_path, mode);
  if (!file) return fail(std::move(file.error()));
  if (auto written = file->write(content); !written) return written;
  return file->publish();
}

}  // namespace vigil
