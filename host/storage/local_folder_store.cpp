#include "storage/local_folder_store.h"

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

class LocalObject final : public StoredObject {
 public:
  LocalObject(os::UniqueFd fd, uint64_t size, std::string description)
      : fd_(std::move(fd)), size_(size), description_(std::move(description)) {}
  LocalObject(const LocalObject&) = delete;
  LocalObject& operator=(const LocalObject&) = delete;

  uint64_t size() const override { return size_; }
  const std::string& description() const override { return description_; }
  const std::string& version() const override {
    static const std::string none;
    return none;
  }

  Result<void> read_at(uint64_t offset, std::span<std::byte> out) const override {
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
};

class LocalFolderStore final : public ObjectStore {
 public:
  LocalFolderStore(fs::path path, format::TrialRoot root) : path_(std::move(path)), root_(std::move(root)) {}

  std::string location() const override { return path_.string(); }
  std::string describe(std::string_view relpath) const override { return (path_ / relpath).string(); }
  bool is_local() const override { return true; }

  Result<std::vector<ObjectInfo>> list(std::string_view folder, std::string_view start_after) const override {
    std::vector<ObjectInfo> out;
    const fs::path top = folder.empty() ? root_.canonical() : root_.canonical() / folder;
    std::error_code ec;
    if (!fs::is_directory(top, ec)) return out;
    const std::string base = folder.empty() ? std::string() : std::string(folder.substr(0, folder.find_last_not_of('/') + 1)) + "/";
    auto it = fs::recursive_directory_iterator(top, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::string rel = base + it->path().lexically_relative(top).generic_string();
      if (it->is_directory(ec)) {
        // A folder whose every name sorts before start_after is not read (index/<step9>/ folders).
        const std::string prefix = rel + "/";
        if (!start_after.empty() && prefix < start_after && !start_after.starts_with(prefix))
          it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec)) continue;
      if (!start_after.empty() && rel <= start_after) continue;
      const uint64_t size = it->file_size(ec);
      out.push_back({.relpath = std::move(rel), .size = ec ? 0 : size, .etag = {}});
      ec.clear();
    }
    // A folder that vanishes while listed ends the listing short; one that cannot be read is an error.
    if (ec && ec != std::errc::no_such_file_or_directory) return fail(Error::io(top.string(), ec.message()));
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
    return std::shared_ptr<const StoredObject>(std::make_shared<LocalObject>(std::move(opened->fd), opened->size, describe(relpath)));
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
