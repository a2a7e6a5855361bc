#include "jobs/output_archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "common/os.h"
#include "common/published_file.h"

namespace vigil::jobs {

namespace fs = std::filesystem;

namespace {

constexpr size_t kBlock = 512;
constexpr size_t kRecord = 20 * kBlock;  // tar's default blocking factor: archives end on a 10240-byte record
constexpr size_t kChunk = 1 << 20;       // bytes read from a file at a time
constexpr int kMaxTarDepth = 64;
// The uploader walks a staging folder 32 folders deep; the uncompressed model lies one below the
// artifacts folder it uploads: deeper folders would not be uploaded, so they are not copied, and said.
constexpr int kMaxCopyDepth = 30;

// ---- the merged walk ------------------------------------------------------------------------

enum class Kind { Folder, File, Symlink };

struct Entry {
  std::string rel;  // '/'-separated, relative to its root
  fs::path source;
  Kind kind;
  struct stat st;
};

using Visitor = std::function<Result<void>(const Entry&)>;

std::string_view kind_name(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a file, folder or link";
}

class MergedWalk {
 public:
  MergedWalk(MergeReport& report, int max_depth, Visitor visit)
      : report_(report), max_depth_(max_depth), visit_(std::move(visit)) {}

  Result<void> run(std::span<const fs::path> roots) {
    for (const fs::path& root : roots) {
      struct stat st {};
      if (::lstat(root.c_str(), &st) != 0) {
        if (errno == ENOENT) continue;  // a host that made no such folder adds nothing
        report_.skipped.push_back(fmt::format("{}: {}", root.string(), std::strerror(errno)));
        continue;
      }
      if (!S_ISDIR(st.st_mode)) {
        report_.skipped.push_back(fmt::format("{}: not a folder (a link to one is not followed)", root.string()));
        continue;
      }
      root_ = &root;
      if (auto r = walk(root, "", 1); !r) return r;
    }
    return {};
  }

 private:
  Result<void> walk(const fs::path& dir, const std::string& rel_dir, int depth) {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      names.push_back(it->path().filename().string());
    if (ec) {
      report_.skipped.push_back(fmt::format("{}: {}", dir.string(), ec.message()));
      return {};
    }
    std::sort(names.begin(), names.end());  // the same archive for the same files
    for (const std::string& name : names) {
      const std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
      const fs::path source = dir / name;
      struct stat st {};
      if (::lstat(source.c_str(), &st) != 0) continue;  // gone since listed
      std::optional<Kind> kind;
      if (S_ISDIR(st.st_mode)) kind = Kind::Folder;
      else if (S_ISREG(st.st_mode)) kind = Kind::File;
      else if (S_ISLNK(st.st_mode)) kind = Kind::Symlink;
      if (!kind) {
        report_.skipped.push_back(fmt::format("{}: {}", source.string(), kind_name(st.st_mode)));
        continue;
      }
      auto [taken, fresh] = taken_.emplace(rel, *kind);
      // A folder two hosts made is one folder; any other name taken twice is a clash.
      if (!fresh && !(taken->second == Kind::Folder && *kind == Kind::Folder)) {
        report_.clashes.push_back(fmt::format("{} ({})", rel, root_->string()));
        continue;
      }
      if (fresh)
        if (auto r = visit_(Entry{rel, source, *kind, st}); !r) return r;
      if (*kind != Kind::Folder) continue;
      if (depth >= max_depth_) {
        report_.skipped.push_back(fmt::format("{}: deeper than {} folders", source.string(), max_depth_));
        continue;
      }
      if (auto r = walk(source, rel, depth + 1); !r) return r;
    }
    return {};
  }

  MergeReport& report_;
  int max_depth_;
  Visitor visit_;
  const fs::path* root_ = nullptr;
  std::map<std::string, Kind> taken_;
};

// Reads `size` bytes of the regular file `source` (opened without following a link) into `sink`,
// chunk by chunk. A file that ends early is padded with zeros (the caller announced `size`) and
// reported; nullopt when it could not be opened as a regular file at all (reported, nothing sunk).
Result<bool> copy_content(const fs::path& source, uint64_t size, MergeReport& report,
                          const std::function<Result<void>(std::string_view)>& sink) {
  const os::UniqueFd fd(::open(source.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    report.skipped.push_back(fmt::format("{}: {}", source.string(), !fd ? std::strerror(errno) : "not a regular file"));
    return false;
  }
  std::string buffer(std::min<uint64_t>(kChunk, std::max<uint64_t>(size, 1)), '\0');
  uint64_t done = 0;
  bool short_read = false;
  while (done < size) {
    const size_t want = size_t(std::min<uint64_t>(buffer.size(), size - done));
    const os::IoOutcome got = os::read_some(fd.get(), std::span(buffer.data(), want));
    if (got.bytes == 0) {
      short_read = true;
      break;
    }
    if (auto r = sink(std::string_view(buffer.data(), got.bytes)); !r) return fail(r.error());
    done += got.bytes;
  }
  if (short_read) {
    report.skipped.push_back(
        fmt::format("{}: ended after {} of {} bytes while it was read (the rest is zeros)", source.string(), done, size));
    std::fill(buffer.begin(), buffer.end(), '\0');
    while (done < size) {
      const size_t n = size_t(std::min<uint64_t>(buffer.size(), size - done));
      if (auto r = sink(std::string_view(buffer.data(), n)); !r) return fail(r.error());
      done += n;
    }
  }
  return true;
}

// ---- tar ------------------------------------------------------------------------------------

// `value` in octal in a field of `width` bytes: width - 1 digits, zero-padded, then a NUL.
void put_octal(char* field, size_t width, uint64_t value) {
  field[width - 1] = '\0';
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = char('0' + (value & 7));
    value >>= 3;
  }
}

bool fits_octal(uint64_t value, size_t width) { return width - 1 >= 22 || value < (uint64_t(1) << (3 * (width - 1))); }

void put_text(char* field, size_t width, std::string_view text) {
  std::memcpy(field, text.data(), std::min(width, text.size()));
}

// One 512-byte ustar header. Names and link targets past their fields and sizes past 11 octal
// digits are cut here; the pax record before the header carries them whole.
std::string ustar_header(std::string_view name, std::string_view link, uint32_t mode, uint64_t size, int64_t mtime, char type) {
  std::string h(kBlock, '\0');
  char* b = h.data();
  put_text(b, 100, name);
  put_octal(b + 100, 8, mode & 07777);
  put_octal(b + 108, 8, 0);  // uid
  put_octal(b + 116, 8, 0);  // gid
  put_octal(b + 124, 12, fits_octal(size, 12) ? size : 0);
  constexpr int64_t kMaxTime = (int64_t(1) << 33) - 1;  // 11 octal digits
  put_octal(b + 136, 12, uint64_t(std::clamp<int64_t>(mtime, 0, kMaxTime)));
  b[156] = type;
  put_text(b + 157, 100, link);
  std::memcpy(b + 257, "ustar", 6);  // magic, NUL-terminated
  std::memcpy(b + 263, "00", 2);      // version
  std::memset(b + 148, ' ', 8);       // the checksum counts its own field as spaces
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  put_octal(b + 148, 7, sum);  // six digits and a NUL, then the space left in place
  return h;
}

// "<length> <key>=<value>\n", the length counting itself.
std::string pax_record(std::string_view key, std::string_view value) {
  const size_t rest = key.size() + value.size() + 3;  // ' ', '=', '\n'
  size_t length = rest + 1;
  while (std::to_string(length).size() + rest != length) length = std::to_string(length).size() + rest;
  return fmt::format("{} {}={}\n", length, key, value);
}

void pad_to_block(std::string& bytes) {
  if (bytes.size() % kBlock) bytes.append(kBlock - bytes.size() % kBlock, '\0');
}

// The headers of one entry: a pax extended header first when the ustar fields cannot hold it.
std::string entry_headers(const std::string& name, std::string_view link, uint32_t mode, uint64_t size, int64_t mtime,
                          char type) {
  std::string pax;
  if (name.size() > 100) pax += pax_record("path", name);
  if (link.size() > 100) pax += pax_record("linkpath", link);
  if (!fits_octal(size, 12)) pax += pax_record("size", std::to_string(size));
  std::string out;
  if (!pax.empty()) {
    out = ustar_header("PaxHeader", "", 0644, pax.size(), mtime, 'x');
    out += pax;
    pad_to_block(out);
  }
  out += ustar_header(name, link, mode, size, mtime, type);
  return out;
}

// tar bytes in, gzip out, into a file published by rename when finished.
class GzipFile {
 public:
  static Result<std::unique_ptr<GzipFile>> create(const fs::path& path) {
    auto file = PublishedFile::create(path, fs::path(path).concat(".tmp"));
    if (!file) return fail(file.error());
    std::unique_ptr<GzipFile> out(new GzipFile(std::move(*file), path));
    // windowBits 15 + 16: a gzip wrapper (RFC 1952) around the deflate stream.
    if (deflateInit2(&out->z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      return fail(Error::internal(fmt::format("{}: zlib's deflateInit2 failed", path.string())));
    out->initialised_ = true;
    return out;
  }
  ~GzipFile() {
    if (initialised_) deflateEnd(&z_);
  }
  GzipFile(const GzipFile&) = delete;
  GzipFile& operator=(const GzipFile&) = delete;

  Result<void> write(std::string_view bytes) {
    written_ += bytes.size();
    return deflate_some(bytes, Z_NO_FLUSH);
  }
  uint64_t written() const { return written_; }

  Result<void> finish() {
    if (auto r = deflate_some({}, Z_FINISH); !r) return r;
    return file_.publish();
  }

 private:
  GzipFile(PublishedFile file, fs::path path) : file_(std::move(file)), path_(std::move(path)), out_(256 * 1024, '\0') {}

  Result<void> deflate_some(std::string_view in, int flush) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = uInt(in.size());  // callers pass at most kChunk or a few blocks
    for (;;) {
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = uInt(out_.size());
      const int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) return fail(Error::internal(fmt::format("{}: zlib's deflate failed", path_.string())));
      const size_t produced = out_.size() - z_.avail_out;
      if (produced > 0)
        if (auto r = file_.write(std::string_view(out_.data(), produced)); !r) return r;
      // Without Z_FINISH, deflate has taken all the input once it left room in the output.
      if (flush == Z_FINISH ? rc == Z_STREAM_END : z_.avail_out != 0) return {};
    }
  }

  PublishedFile file_;
  fs::path path_;
  std::string out_;
  z_stream z_{};
  bool initialised_ = false;
  uint64_t written_ = 0;
};

}  // namespace

Result<MergeReport> write_merged_tar_gz(std::span<const fs::path> roots, const fs::path& archive) {
  try {
    auto gz = GzipFile::create(archive);
    if (!gz) return fail(gz.error());
    GzipFile& out = **gz;
    MergeReport report;
    MergedWalk walk(report, kMaxTarDepth, [&](const Entry& e) -> Result<void> {
      const uint32_t mode = uint32_t(e.st.st_mode);
      const int64_t mtime = int64_t(e.st.st_mtim.tv_sec);
      if (e.kind == Kind::Folder) return out.write(entry_headers(e.rel + "/", "", mode, 0, mtime, '5'));
      if (e.kind == Kind::Symlink) {
        std::string target(4096, '\0');
        const ssize_t n = ::readlink(e.source.c_str(), target.data(), target.size());
        if (n < 0 || size_t(n) >= target.size()) {
          report.skipped.push_back(fmt::format("{}: cannot read the link: {}", e.source.string(),
                                               n < 0 ? std::strerror(errno) : "longer than 4095 bytes"));
          return {};
        }
        target.resize(size_t(n));
        ++report.files;
        return out.write(entry_headers(e.rel, target, mode, 0, mtime, '2'));
      }
      // The header is written before the content: the size it announces is the size at lstat.
      const uint64_t size = uint64_t(e.st.st_size);
      bool header_written = false;
      auto taken = copy_content(e.source, size, report, [&](std::string_view bytes) -> Result<void> {
        if (!header_written) {
          header_written = true;
          if (auto r = out.write(entry_headers(e.rel, "", mode, size, mtime, '0')); !r) return r;
        }
        return out.write(bytes);
      });
      if (!taken) return fail(taken.error());
      if (!*taken) return {};
      if (!header_written)  // an empty file: no content, so the header was not written yet
        if (auto r = out.write(entry_headers(e.rel, "", mode, 0, mtime, '0')); !r) return r;
      ++report.files;
      report.bytes += size;
      if (size % kBlock) return out.write(std::string(kBlock - size % kBlock, '\0'));
      return {};
    });
    if (auto r = walk.run(roots); !r) return fail(r.error());
    // The end: two zero blocks, then zeros to the end of the record.
    const uint64_t end = out.written() + 2 * kBlock;
    const uint64_t padded = (end + kRecord - 1) / kRecord * kRecord;
    if (auto r = out.write(std::string(size_t(padded - out.written()), '\0')); !r) return fail(r.error());
    if (auto r = out.finish(); !r) return fail(r.error());
    return report;
  } catch (const std::exception& e) {
    return fail(Error::internal(fmt::format("writing {}: {}", archive.string(), e.what())));
  }
}

Result<MergeReport> copy_merged(std::span<const fs::path> roots, const fs::path& folder) {
  try {
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) return fail(Error::io_write(folder.string(), ec.message()));
    MergeReport report;
    MergedWalk walk(report, kMaxCopyDepth, [&](const Entry& e) -> Result<void> {
      const fs::path target = folder / fs::path(e.rel);
      if (e.kind == Kind::Folder) {
        std::error_code made;
        fs::create_directory(target, made);
        if (made) return fail(Error::io_write(target.string(), made.message()));
        return {};
      }
      if (e.kind == Kind::Symlink) {
        report.skipped.push_back(fmt::format("{}: a symbolic link (an uncompressed model holds files only)", e.source.string()));
        return {};
      }
      auto file = PublishedFile::create(target, fs::path(target).concat(".tmp"));
      if (!file) return fail(file.error());
      const uint64_t size = uint64_t(e.st.st_size);
      auto taken = copy_content(e.source, size, report, [&](std::string_view bytes) { return file->write(bytes); });
      if (!taken) return fail(taken.error());
      if (!*taken) return {};  // the temporary file goes with `file`
      if (auto r = file->publish(); !r) return fail(r.error());
      ::chmod(target.c_str(), e.st.st_mode & 0777);
      ++report.files;
      report.bytes += size;
      return {};
    });
    if (auto r = walk.run(roots); !r) return fail(r.error());
    return report;
  } catch (const std::exception& e) {
    return fail(Error::internal(fmt::format("copying into {}: {}", folder.string(), e.what())));
  }
}

}  // namespace vigil::jobs
