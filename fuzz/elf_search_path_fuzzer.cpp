// The ELF dynamic-section reader of the plugin loader (host/plugin_host/elf_search_path.*): the input
// is a shared object's bytes, handed over as a file (an anonymous memory file, as the reader takes a
// path). Whatever the bytes, it returns the search path or an error, reading within the file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "plugin_host/elf_search_path.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("elf_fuzz", MFD_CLOEXEC);
  FUZZ_CHECK(fd >= 0);
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    FUZZ_CHECK(n > 0);
    done += size_t(n);
  }
  auto path = vigil::plugin_host::elf_library_search_path("/proc/self/fd/" + std::to_string(fd));
  if (!path) FUZZ_CHECK(!path.error().message.empty());
  else
    for (const auto& entry : *path) FUZZ_CHECK(entry.size() <= size);  // every entry comes from the file
  close(fd);
  return 0;
}
