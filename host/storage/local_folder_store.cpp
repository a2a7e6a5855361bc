#include "storage/local_folder_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/os.h"
#include "common/published_file.h"
#include "format/trial_layout.h"

namespace vigil::storage {
namespace fs = std::filesystem;
namespace {

// A small file is read whole when it is opened, in the one read that costs, and its records are
// then copied from memory: a step's event file of small tensors (a few KiB, one file per step as
// smdebug writes them) took a pread per record, five per step for a rule reading five gradients.
// Larger files are read a record at a time. Bytes past those read at opening (a writer that
// appends) are read from the file.
constexpr uint64_t kOpenedStartBytes = 16 * 1024;

class LocalObject final : public StoredObject {
 public:
  LocalObject(os::UniqueFd fd, uint64_t size, std::string description, std::string start)
      : fd_(std::move(fd)), size_(size), description_(std::move(description)), start_(std::move(start)) {}
  LocalObject(const LocalObject&) = delete;
  LocalObject& operator=(const LocalObject&) = delete;

  uint64_t size() const override { return size_; }
  const std::string& description() const override { return description_; }
  const std::string& version() const override {
    static const std::string none;
    return none;
  }

  Result<void> read_at(uint64_t offset, std::span<std::byte> out) const override {
    if (offset <= start_.size() && out.size() <= start_.size() - offset) {
      std::memcpy(out.data(), start_.data() + offset, out.size());
      return {};
    }
    const os::IoOutcome got = os::read_at(fd_.get(), std::span(reinterpret_cast<char*>(out.data()), out.size()), offset);
    if (got.bytes < out.size())
      return fail(Error::io(description_, got.error != 0 ? std::strerror(got.error) : "unexpected end of file"));
    return {};
  }

  Result<uint64_t> current_size() const override {
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) return fail(Error::io(description_, std::strerror(errno)));
    return uint64_t(st.st_size);
  }

 private:
  os::UniqueFd fd_;
  uint64_t size_;
  std::string description_;
  std::string start_;  // the file's first bytes, read when it was opened (all of a small file)
};

class LocalFolderStore final : public ObjectStore {
 public:
  LocalFolderStore(fs::path path, format::TrialRoot root) : path_(std::move(path)), root_(std::move(root)) {}

  std::string location() const override { return path_.string(); }
  std::string describe(std::string_view relpath) const override {
    // A relative path is joined as a string (this names every index file read); anything else as
    // std::filesystem joins it.
    if (relpath.empty() || relpath.front() == '/') return (path_ / relpath).string();
    const std::string& root = path_.native();
    std::string out;
    out.reserve(root.size() + 1 + relpath.size());  // one allocation (opening names every event file)
    out.append(root);
    if (!out.empty() && out.back() != '/') out.push_back('/');
    return out.append(relpath);
  }
  bool is_local() const override { return true; }

  Result<std::vector<ObjectInfo>> list(std::string_view folder, std::string_view start_after) const override {
    std::vector<ObjectInfo> out;
    if (!folder.empty())
      if (auto why = format::unsafe_relative_path(folder)) return fail(Error::index_reader(*why, describe(folder)));
    const std::string base = folder.empty() ? std::string() : std::string(folder.substr(0, folder.find_last_not_of('/') + 1)) + "/";
    // Read through descriptors, names joined as strings: a listing of index/ meets one entry per
    // index file, so no std::filesystem path is built per entry.
    os::UniqueFd top(::openat(root_.fd(), base.empty() ? "." : base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!top) {
      if (errno == ENOENT || errno == ENOTDIR) return out;
      return fail(Error::io(describe(base), std::strerror(errno)));
    }
    if (auto r = list_folder(std::move(top), base, start_after, out); !r) return fail(r.error());
    std::sort(out.begin(), out.end(), [](const ObjectInfo& a, const ObjectInfo& b) { return a.relpath < b.relpath; });
    return out;
  }

  Result<bool> folder_exists(std::string_view folder) const override {
    std::error_code ec;
    if (folder.empty()) return fs::is_directory(root_.canonical(), ec);
    if (auto why = format::unsafe_relative_path(folder)) return fail(Error::index_reader(*why, describe(folder)));
    return fs::is_directory(root_.canonical() / folder, ec);
  }

  Result<std::string> read(std::string_view relpath) const override { return root_.read_file(relpath); }

  Result<std::shared_ptr<const StoredObject>> open(std::string_view relpath) const override {
    auto opened = root_.open_file(relpath);
    if (!opened) return fail(opened.error());
    std::string start;
    if (opened->size <= kOpenedStartBytes) {
      // Short (the file shrank, or the read failed): the rest is read, or refused, by read_at.
      start.resize_and_overwrite(opened->size, [&](char* data, size_t size) {
        return os::read_at(opened->fd.get(), {data, size}, 0).bytes;
      });
    }
    return std::shared_ptr<const StoredObject>(
        std::make_shared<LocalObject>(std::move(opened->fd), opened->size, describe(relpath), std::move(start)));
  }

  Result<bool> exists(std::string_view relpath) const override {
    if (auto why = format::unsafe_relative_path(relpath)) return fail(Error::index_reader(*why, describe(relpath)));
    std::error_code ec;
    return fs::exists(root_.canonical() / relpath, ec);
  }

  Result<void> write(std::string_view relpath, std::string_view bytes) const override {
    if (auto why = format::unsafe_relative_path(relpath)) return fail(Error::invalid_argument(*why));
    const fs::path final_path = root_.canonical() / relpath;
    std::error_code ec;
    fs::create_directories(final_path.parent_path(), ec);
    if (ec) return fail(Error::io_write(final_path.parent_path().string(), ec.message()));
    fs::path tmp = final_path;
    tmp += std::string(format::kTmpSuffix);
    return publish_file(final_path, tmp, bytes);
  }

 private:
  // Appends the regular files under the open folder `dir` (named `prefix`, "" or ending in '/') to
  // `out`, recursing into subfolders but not into symbolic links to folders; a symbolic link to a
  // file is listed as a file. A folder whose every name sorts before start_after is not
  // read (index/<step9>/ folders). A folder that vanishes while listed ends its part short.
  static Result<void> list_folder(os::UniqueFd dir, const std::string& prefix, std::string_view start_after,
                                  std::vector<ObjectInfo>& out) {
    DIR* stream = ::fdopendir(dir.get());
    if (!stream) return fail(Error::io(prefix, std::strerror(errno)));
    dir.release();  // the stream owns it now
    std::unique_ptr<DIR, int (*)(DIR*)> closer(stream, ::closedir);
    const int fd = ::dirfd(stream);
    std::string rel;
    while (true) {
      errno = 0;
      const dirent* e = ::readdir(stream);
      if (!e) {
        if (errno != 0 && errno != ENOENT) return fail(Error::io(prefix, std::strerror(errno)));
        return {};
      }
      const std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      rel.assign(prefix).append(name);
      bool folder = e->d_type == DT_DIR;
      bool file = e->d_type == DT_REG;
      if (!folder && !file) {
        // Links and unknown types need their target's type; the entry gives the others theirs (a
        // listing reads no sizes: an index file costs no system call here).
        struct stat st {};
        if (::fstatat(fd, e->d_name, &st, 0) != 0) continue;  // vanished, or a dangling link
        file = S_ISREG(st.st_mode);
        folder = e->d_type != DT_LNK && S_ISDIR(st.st_mode);  // a link to a folder is not followed
      }
      if (folder) {
        rel.push_back('/');
        if (!start_after.empty() && std::string_view(rel) < start_after && !start_after.starts_with(rel)) continue;
        os::UniqueFd sub(::openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!sub) {
          if (errno == ENOENT) continue;
          return fail(Error::io(rel, std::strerror(errno)));
        }
        if (auto r = list_folder(std::move(sub), rel, start_after, out); !r) return r;
        continue;
      }
      if (!file) continue;
      if (!start_after.empty() && std::string_view(rel) <= start_after) continue;
      out.push_back({.relpath = rel, .etag = {}});
    }
  }

  fs::path path_;  // as the caller named it, for messages
  format::TrialRoot root_;
};

}  // namespace

Result<std::shared_ptr<ObjectStore>> open_local_folder_store(const fs::path& path, bool create) {
  std::error_code ec;
  if (create) {
    fs::create_directories(path, ec);
    if (ec) return fail(Error::io_write(path.string(), ec.message()));
  }
  if (!fs::is_directory(path, ec)) return fail(Error::io(path.string(), "no such trial directory"));
  auto root = format::TrialRoot::open(path);
  if (!root) return fail(root.error());
  return std::shared_ptr<ObjectStore>(std::make_shared<LocalFolderStore>(path, std::move(*root)));
}

}  // namespace vigil::storage
