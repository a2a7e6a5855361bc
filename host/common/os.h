// The operating-system layer: what Vigil asks of POSIX, in one place. It starts with the SIGPIPE
// policy and the writes it governs.
//
// SIGPIPE policy (docs/reliability.md): no Vigil process is ever killed by SIGPIPE. A write to a pipe
// or socket whose reader is gone is an error of that write (EPIPE), reported to whoever wrote.
//   * Processes Vigil owns (the `vigil` command, its isolated evaluator children) ignore SIGPIPE for
//     the whole process: ignore_sigpipe_in_this_process() first thing in main.
//   * In processes Vigil does not own (the Python module, a C++ training loop with the libtorch hook),
//     the process's disposition is the host's; every thread Vigil starts blocks SIGPIPE on itself
//     (block_sigpipe_on_this_thread()), and write_all() blocks it around each write whatever thread
//     calls it, consuming the signal its own write raised.
//   * Children Vigil starts get SIGPIPE back at its default (posix_spawnattr_setsigdefault): an
//     ignored disposition would otherwise survive exec into the user's programs.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

namespace vigil::os {

void ignore_sigpipe_in_this_process();
void block_sigpipe_on_this_thread();

// Names the calling thread (at most 15 characters kept), as ps -L, top -H, gdb and
// /proc/<pid>/task/*/comm show it. The threads Vigil starts inside a training process are named
// "vigil-..." so that one alive at the process's end can be told apart from the framework's.
void name_this_thread(const char* name);

struct WriteOutcome {
  size_t written = 0;  // bytes the reader got (or that sit in the pipe) before the error
  int error = 0;       // 0 when all was written; EPIPE when the reader is gone; ETIMEDOUT; or the errno
  bool ok() const { return error == 0; }
};

// Writes all of `bytes` to `fd` (a pipe, socket, terminal or file), through EINTR and partial writes.
// A non-blocking fd is waited for with poll() until `deadline` (none: for ever). SIGPIPE never
// reaches the process from these writes.
WriteOutcome write_all(int fd, std::string_view bytes,
                       std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

}  // namespace vigil::os
