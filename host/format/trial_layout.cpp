#include "format/trial_layout.h"

#include "common/file_read.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

namespace vigil::format {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Python floor division, so that negative steps land where smdebug would put them.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Matches `\d+_(.+)\.(json|csv|tfevents)$` against the whole of `rest`; returns group 1.
std::optional<std::string_view> match_step_worker(std::string_view rest) {
  size_t i = 0;
  while (i < rest.size() && is_digit(rest[i])) ++i;
  if (i == 0 || i >= rest.size() || rest[i] != '_') return std::nullopt;
  std::string_view tail = rest.substr(i + 1);
  // (.+) is greedy, so the worker ends at the extension that closes the string.
  for (std::string_view ext : {std::string_view(".json"), std::string_view(".csv"), std::string_view(".tfevents")}) {
    if (tail.size() > ext.size() && tail.ends_with(ext)) return tail.substr(0, tail.size() - ext.size());
  }
  return std::nullopt;
}

}  // namespace

std::string event_file_relpath(int64_t global_step, std::string_view worker) {
  return fmt::format("events/{:012d}/{:012d}_{}.tfevents", global_step, global_step, worker);
}

std::string index_file_relpath(int64_t global_step, std::string_view worker) {
  return fmt::format("index/{:09d}/{:012d}_{}.json", floor_div(global_step, 1000), global_step, worker);
}

std::string collections_file_relpath(std::string_view worker) {
  return fmt::format("collections/000000000/{}_collections.json", worker);
}

std::string serialize_worker_name(std::string_view worker) {
  std::string s(worker);
  std::replace(s.begin(), s.end(), '/', '_');
  std::replace(s.begin(), s.end(), ':', '-');
  return s;
}

std::string deserialize_worker_name(std::string_view serialized) {
  std::string s(serialized);
  std::replace(s.begin(), s.end(), '_', '/');
  std::replace(s.begin(), s.end(), '-', ':');
  return s;
}

std::optional<StepFileName> parse_step_file_name(std::string_view path) {
  // Python's '.' never matches a newline; such names cannot be smdebug's.
  if (path.find('\n') != std::string_view::npos) return std::nullopt;
  // smdebug matches `.+/\d+_(.+)\.(json|csv|tfevents)$` on a full path; a bare basename gets a
  // dummy directory so the same rule applies.
  std::string full;
  if (path.find('/') == std::string_view::npos) {
    full = "x/";
    full += path;
    path = full;
  }

  // `.+/` is greedy: the regex uses the last '/' (not at position 0) after which the rest matches.
  std::optional<std::string_view> worker;
  for (size_t slash = path.rfind('/'); slash != std::string_view::npos && slash > 0; slash = path.rfind('/', slash - 1)) {
    worker = match_step_worker(path.substr(slash + 1));
    if (worker) break;
  }
  if (!worker) return std::nullopt;

  // The global step is int(basename.split("_")[0]).
  const std::string_view base = path.substr(path.rfind('/') + 1);
  const std::string_view step_text = base.substr(0, base.find('_'));
  if (step_text.empty() || !std::all_of(step_text.begin(), step_text.end(), is_digit)) return std::nullopt;
  int64_t step = 0;
  auto [ptr, ec] = std::from_chars(step_text.data(), step_text.data() + step_text.size(), step);
  if (ec != std::errc{} || ptr != step_text.data() + step_text.size()) return std::nullopt;

  StepFileName out{step, std::string(*worker)};
  if (path.find("__") != std::string_view::npos) out.worker = deserialize_worker_name(out.worker);
  return out;
}

std::optional<std::string> parse_collections_file_name(std::string_view basename) {
  constexpr std::string_view kSuffix = "_collections.json";
  if (basename.size() <= kSuffix.size() || !basename.ends_with(kSuffix)) return std::nullopt;
  if (basename.find('/') != std::string_view::npos || basename.find('\n') != std::string_view::npos)
    return std::nullopt;
  std::string worker(basename.substr(0, basename.size() - kSuffix.size()));
  if (worker.front() == '_') worker = deserialize_worker_name(worker);
  return worker;
}

std::optional<std::string> unsafe_relative_path(std::string_view p) {
  if (p.empty()) return "is empty";
  if (p.front() == '/') return "is an absolute path";
  if (p.find('\0') != std::string_view::npos) return "contains a NUL byte";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string_view::npos) end = p.size();
    if (p.substr(start, end - start) == "..") return "contains a '..' component";
    start = end + 1;
  }
  return std::nullopt;
}

namespace {

bool is_inside(const std::string& real_path, const std::string& root) {
  if (root == "/") return true;
  return real_path.size() > root.size() && real_path.starts_with(root) && real_path[root.size()] == '/';
}

}  // namespace

Result<TrialRoot> TrialRoot::open(const std::filesystem::path& path) {
  std::error_code ec;
  auto canonical = std::filesystem::canonical(path, ec);
  if (ec) return fail(Error::io(path.string(), ec.message()));
  os::UniqueFd fd(::open(canonical.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return fail(Error::io(path.string(), std::strerror(errno)));
  return TrialRoot(std::move(canonical), std::move(fd));
}

namespace {

Error refusal(const std::string& file, const std::filesystem::path& root, std::string_view why) {
  return Error::index_reader(fmt::format("{}: refused: {} (trial directory {})", file, why, root.string()), file);
}

}  // namespace

Result<TrialRoot::OpenedFile> TrialRoot::open_file(std::string_view relpath) const {
  if (auto why = unsafe_relative_path(relpath))
    return fail(refusal((canonical_ / relpath).string(), canonical_,
                        fmt::format("the path '{}' {}, so it would leave the trial directory", relpath, *why)));
  // O_NONBLOCK: opening a FIFO planted in the trial must not block; regular files ignore the flag.
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  // NUL-terminated on the stack when it fits (index and event file names do).
  char small[256];
  std::string large;
  const char* rel = small;
  if (relpath.size() < sizeof small) {
    std::memcpy(small, relpath.data(), relpath.size());
    small[relpath.size()] = '\0';
  } else {
    large.assign(relpath);
    rel = large.c_str();
  }
  os::UniqueFd fd(int(::syscall(SYS_openat2, fd_.get(), rel, &how, sizeof how)));
  if (!fd) {
    if (errno == ENOENT || errno == EACCES || errno == ENOTDIR || errno == EISDIR)
      return fail(Error::io((canonical_ / relpath).string(), std::strerror(errno)));
    return open_by_name(relpath);  // EXDEV (leaves the root on the way), ENOSYS, a seccomp filter, ...
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return fail(refusal((canonical_ / relpath).string(), canonical_, "it is not a regular file"));
  return OpenedFile{std::move(fd), uint64_t(st.st_size)};
}

Result<TrialRoot::OpenedFile> TrialRoot::open_by_name(std::string_view relpath) const {
  namespace fs = std::filesystem;
  const std::string file = (canonical_ / relpath).string();
  os::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return fail(Error::io(file, std::strerror(errno)));
  // Where the opened file really is, after every symlink: checked on the descriptor rather than the
  // name, so swapping a symlink between a check and the open cannot slip a file past this.
  std::error_code ec;
  fs::path real = fs::read_symlink(fmt::format("/proc/self/fd/{}", fd.get()), ec);
  if (ec) real = fs::canonical(file, ec);  // no /proc: fall back to resolving the name
  struct stat st {};
  std::string problem;
  if (ec) problem = fmt::format("cannot resolve where it points ({})", ec.message());
  else if (!is_inside(real.string(), canonical_.string()))
    problem = fmt::format("it resolves to {}, outside the trial directory", real.string());
  else if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    problem = "it is not a regular file";
  if (!problem.empty()) return fail(refusal(file, canonical_, problem));
  return OpenedFile{std::move(fd), uint64_t(st.st_size)};
}

Result<std::string> TrialRoot::read_file(std::string_view relpath) const {
  auto opened = open_file(relpath);
  if (!opened) return fail(opened.error());
  // For messages: joined as a string in one allocation, not a path, per file (every index file).
  const std::string& root = canonical_.native();
  std::string file;
  file.reserve(root.size() + 1 + relpath.size());
  file.append(root);
  if (file.back() != '/') file.push_back('/');
  return read_all(opened->fd.get(), file.append(relpath), opened->size);
}

}  // namespace vigil::format
