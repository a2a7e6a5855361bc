// The commands whose work is Python's, forwarded to `python -m vigil.<module>` with the same arguments:
// `vigil run` (an unmodified PyTorch training command with capture on: bindings/python/vigil/run.py,
// the start-up hook, torch's global hooks, the evaluator beside the command) and `vigil fleet` (many
// trials evaluated on a Dask cluster: bindings/python/vigil/fleet.py). The Python is the one of this
// installation (the one beside this program in a virtual environment), else $VIGIL_PYTHON, else
// python3 from PATH. VIGIL_EXECUTABLE tells it which vigil to run `vigil evaluate` with. The Python
// program replaces this one (exec, as `python -m vigil COMMAND` does the other way): it is not a child
// of vigil's (common/process.h), so signals and the exit status are the Python program's own.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "cli/commands.h"

namespace vigil::cli {

namespace {

// The interpreter that has this installation's Python package: $VIGIL_PYTHON, else bin/python3 (or
// bin/python) beside this program (pip installs both into the environment's bin/), else python3.
std::string python_for(const std::filesystem::path& self) {
  if (const char* p = std::getenv("VIGIL_PYTHON"); p != nullptr && *p != '\0') return p;
  for (const char* name : {"python3", "python"}) {
    std::error_code ec;
    const auto candidate = self.parent_path() / name;
    if (std::filesystem::exists(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "python3";
}

}  // namespace

int run_python_command(const std::string& command, const std::vector<std::string>& args) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    std::fprintf(stderr, "vigil %s: cannot find this program's path: %s\n", command.c_str(), ec.message().c_str());
    return kExitInternal;
  }
  const std::string python = python_for(self);
  ::setenv("VIGIL_EXECUTABLE", self.c_str(), 1);
  std::vector<std::string> argv_storage{python, "-m", "vigil." + command};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execvp(python.c_str(), argv.data());
  std::fprintf(stderr, "vigil %s: cannot start %s: %s (set VIGIL_PYTHON to a Python with the vigil package)\n",
               command.c_str(), python.c_str(), std::strerror(errno));
  return kExitFailure;
}

}  // namespace vigil::cli
