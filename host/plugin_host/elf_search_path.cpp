#include "plugin_host/elf_search_path.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "common/os.h"

namespace vigil::plugin_host {

namespace {

constexpr size_t kMaxProgramHeaders = 4096;
constexpr size_t kMaxDynamicEntries = 65536;
constexpr size_t kMaxSearchPathLength = 64 * 1024;

class ElfFile {
 public:
  ElfFile(int fd, uint64_t size, std::string name) : fd_(fd), size_(size), name_(std::move(name)) {}

  // `count` objects of T at `offset`, or an error when they do not lie wholly inside the file.
  template <typename T>
  Result<std::vector<T>> read(uint64_t offset, uint64_t count, std::string_view what) const {
    if (count > size_ / sizeof(T) || offset > size_ - count * sizeof(T))
      return fail(bad(fmt::format("its {} lies outside the file", what)));
    std::vector<T> out(count);
    const std::span<char> bytes(reinterpret_cast<char*>(out.data()), count * sizeof(T));
    const os::IoOutcome got = os::read_at(fd_, bytes, offset);
    if (!got.ok()) return fail(Error::io(name_, std::strerror(got.error)));
    if (got.bytes != bytes.size()) return fail(bad(fmt::format("its {} lies outside the file", what)));
    return out;
  }

  Error bad(std::string why) const {
    return Error::invalid_argument(fmt::format("{}: not a well-formed ELF shared object: {}", name_, why));
  }

 private:
  int fd_;
  uint64_t size_;
  std::string name_;
};

// The file offset of virtual address `vaddr`, through the PT_LOAD segment holding it.
std::optional<uint64_t> file_offset(const std::vector<Elf64_Phdr>& headers, uint64_t vaddr) {
  for (const auto& h : headers)
    if (h.p_type == PT_LOAD && vaddr >= h.p_vaddr && vaddr - h.p_vaddr < h.p_filesz &&
        h.p_offset <= UINT64_MAX - (vaddr - h.p_vaddr))
      return h.p_offset + (vaddr - h.p_vaddr);
  return std::nullopt;
}

}  // namespace

Result<std::vector<std::string>> elf_library_search_path(const std::filesystem::path& file) {
  const os::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return fail(Error::io(file.string(), std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(Error::io(file.string(), std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return fail(Error::invalid_argument(file.string() + ": not a regular file"));
  const ElfFile elf(fd.get(), uint64_t(st.st_size), file.string());

  auto header = elf.read<Elf64_Ehdr>(0, 1, "header");
  if (!header) return fail(header.error());
  const Elf64_Ehdr& eh = header->front();
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return fail(elf.bad("no ELF magic"));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return fail(elf.bad("not a 64-bit ELF file"));
  const unsigned char native = std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
  if (eh.e_ident[EI_DATA] != native) return fail(elf.bad("not of this machine's byte order"));
  if (eh.e_type != ET_DYN) return fail(elf.bad("not a shared object"));
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > kMaxProgramHeaders) return fail(elf.bad("malformed program headers"));
  auto headers = elf.read<Elf64_Phdr>(eh.e_phoff, eh.e_phnum, "program headers");
  if (!headers) return fail(headers.error());

  const Elf64_Phdr* dynamic = nullptr;
  for (const auto& h : *headers)
    if (h.p_type == PT_DYNAMIC) dynamic = &h;
  if (!dynamic) return std::vector<std::string>{};  // statically linked: it searches nothing
  const uint64_t entries = dynamic->p_filesz / sizeof(Elf64_Dyn);
  if (entries > kMaxDynamicEntries) return fail(elf.bad("a dynamic section too large"));
  auto dyn = elf.read<Elf64_Dyn>(dynamic->p_offset, entries, "dynamic section");
  if (!dyn) return fail(dyn.error());

  std::optional<uint64_t> strtab, strsz;
  std::vector<uint64_t> paths;  // offsets in the string table
  for (const auto& d : *dyn) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_STRTAB) strtab = d.d_un.d_ptr;
    if (d.d_tag == DT_STRSZ) strsz = d.d_un.d_val;
    if (d.d_tag == DT_RPATH || d.d_tag == DT_RUNPATH) paths.push_back(d.d_un.d_val);
  }
  if (paths.empty()) return std::vector<std::string>{};
  if (!strtab || !strsz) return fail(elf.bad("a search path without a string table"));
  const std::optional<uint64_t> table = file_offset(*headers, *strtab);
  if (!table) return fail(elf.bad("its string table lies outside its segments"));

  std::vector<std::string> out;
  for (const uint64_t at : paths) {
    if (at >= *strsz || *table > UINT64_MAX - at) return fail(elf.bad("a search path outside the string table"));
    const uint64_t room = std::min<uint64_t>(*strsz - at, kMaxSearchPathLength + 1);
    auto bytes = elf.read<char>(*table + at, room, "search path");
    if (!bytes) return fail(bytes.error());
    const auto end = std::find(bytes->begin(), bytes->end(), '\0');
    if (end == bytes->end()) return fail(elf.bad("an unterminated or overlong search path"));
    const std::string text(bytes->begin(), end);
    for (size_t start = 0;;) {
      const size_t colon = text.find(':', start);
      out.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  return out;
}

}  // namespace vigil::plugin_host
