// The `vigil` command's sub-commands. Each takes its own arguments (after the sub-command name)
// and returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace vigil::cli {

// Exit codes shared by all sub-commands.
inline constexpr int kExitOk = 0;        // it ran (whatever the rules found)
inline constexpr int kExitFailure = 1;   // the command ran but failed (unreadable trial, ...)
inline constexpr int kExitUsage = 2;     // bad command line or bad job: refused before anything ran
inline constexpr int kExitInternal = 3;  // internal failure (status file not writable, ...)

int run_inspect(const std::vector<std::string>& args);
int run_evaluate(const std::vector<std::string>& args);
int run_rules(const std::vector<std::string>& args);
int run_image_uri(const std::vector<std::string>& args);
int run_monitor(const std::vector<std::string>& args);
// run_command.cpp: `vigil run` and `vigil fleet`, forwarded to `python -m vigil.<command>` (the
// command's name is the module's)
int run_python_command(const std::string& command, const std::vector<std::string>& args);
// training_job_commands.cpp
int run_train(const std::vector<std::string>& args);
int run_describe_training_job(const std::vector<std::string>& args);
int run_list_training_jobs(const std::vector<std::string>& args);
int run_stop_training_job(const std::vector<std::string>& args);
int run_update_training_job(const std::vector<std::string>& args);
int run_attach(const std::vector<std::string>& args);

}  // namespace vigil::cli
