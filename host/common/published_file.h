// Files published whole: written under a temporary name beside the final one, then renamed over it,
// so a reader never sees one half written (smdebug's ".tmp" convention, format spec §1.6). The one
// implementation for the writer's event, index and collection files, TensorBoard files and the
// evaluator's status file.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <filesystem>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "common/error.h"

namespace vigil {

class PublishedFile {
 public:
  // Creates (truncates) `tmp_path`, the file's name until publish(); its folder must exist. `mode`
  // before the umask: 0600 for what other local users must not read.
  [[nodiscard]] static Result<PublishedFile> create(std::filesystem::path final_path, std::filesystem::path tmp_path,
                                                    mode_t mode = 0666);
  PublishedFile(PublishedFile&& other) noexcept;
  PublishedFile& operator=(PublishedFile&& other) noexcept;
  PublishedFile(const PublishedFile&) = delete;
  PublishedFile& operator=(const PublishedFile&) = delete;
  // Unpublished, the temporary file is removed.
  ~PublishedFile();

  [[nodiscard]] Result<void> write(std::string_view bytes);
  // Writes the parts in order with as few system calls as the kernel allows (writev), resuming after
  // a partial write. `parts` is consumed.
  [[nodiscard]] Result<void> write_parts(std::span<iovec> parts);
  // Closes the temporary file and renames it to the final name. On failure the temporary file is
  // removed. Either way the object is closed afterwards.
  [[nodiscard]] Result<void> publish();
  // publish() under a name known only once the content is written (a trace file is named by its
  // last event); the folder of `final_path` must exist.
  [[nodiscard]] Result<void> publish_as(std::filesystem::path final_path);

  bool is_open() const noexcept { return fd_ >= 0; }
  const std::filesystem::path& final_path() const noexcept { return final_; }
  const std::filesystem::path& tmp_path() const noexcept { return tmp_; }

 private:
  PublishedFile() = default;
  void discard() noexcept;

  std::filesystem::path final_;
  std::filesystem::path tmp_;
  int fd_ = -1;
};

// `content` as the whole of `final_path`, through `tmp_path`.
[[nodiscard]] Result<void> publish_file(const std::filesystem::path& final_path, const std::filesystem::path& tmp_path,
                                        std::string_view content, mode_t mode = 0666);

}  // namespace vigil
