// `vigil`: the command-line front end. Dispatches to sub-commands.
#include <cstdio>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "common/os.h"

namespace {

constexpr std::string_view kUsage = R"(usage: vigil <command> [options]

Vigil reads training data saved in SageMaker Debugger (smdebug) format and runs debugger rules on it.

commands:
  evaluate        run debugger rules over a trial (the rule evaluator)
  rules           list the rules the plugins provide, and refused plugins
  inspect TRIAL   summarise a trial (workers, steps, tensors, collections); --json for a full dump
  image-uri       the ECR URI of SageMaker's rule evaluator images for a region
  monitor         sample this machine (CPU, memory, disk, network, GPU) into SageMaker's system metrics files
  run [OPTIONS] -- COMMAND...
                  run an unmodified PyTorch training command with capture on, rules evaluated live
  fleet TRIAL...  evaluate rules over many trials (paths, a glob, s3://bucket/prefix/*/debug-output)
                  on a Dask cluster, into one table (needs the vigil[fleet] extra)

training jobs (docs/training-jobs.md, docs/remote-debug.md):
  train JOB.json -- COMMAND...   run a CreateTrainingJob here, with Debugger's rules beside it
  describe-training-job NAME     the job's status, transitions and rule statuses (--json: SageMaker's shape)
  list-training-jobs             the jobs, newest first
  stop-training-job NAME         stop a running job
  update-training-job NAME --remote-debug on|off
  attach NAME_algo-N             a shell in a running job's host (RemoteDebugConfig)

Run `vigil <command> --help` for the options of a command.
options:
  -h, --help      show this help
  --version       print the version
)";

int run_command(const std::string& command, const std::vector<std::string>& args) {
  if (command == "inspect") return vigil::cli::run_inspect(args);
  if (command == "evaluate") return vigil::cli::run_evaluate(args);
  if (command == "rules") return vigil::cli::run_rules(args);
  if (command == "image-uri") return vigil::cli::run_image_uri(args);
  if (command == "monitor") return vigil::cli::run_monitor(args);
  if (command == "run" || command == "fleet") return vigil::cli::run_python_command(command, args);
  if (command == "train") return vigil::cli::run_train(args);
  if (command == "describe-training-job") return vigil::cli::run_describe_training_job(args);
  if (command == "list-training-jobs") return vigil::cli::run_list_training_jobs(args);
  if (command == "stop-training-job") return vigil::cli::run_stop_training_job(args);
  if (command == "update-training-job") return vigil::cli::run_update_training_job(args);
  if (command == "attach") return vigil::cli::run_attach(args);
  std::fprintf(stderr, "vigil: unknown command '%s'\n\n%s", command.c_str(), kUsage.data());
  return vigil::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // The SIGPIPE policy (common/os.h): a reader gone is an error of that write, never the end of vigil
  // (a closed terminal, a `| head`, a notification command that exits without reading, a rule's
  // process that died). The children vigil starts get the default back.
  vigil::os::ignore_sigpipe_in_this_process();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage.data(), stderr);
    return vigil::cli::kExitUsage;
  }
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage.data(), stdout);
    return vigil::cli::kExitOk;
  }
  if (command == "--version") {
    std::puts("vigil " VIGIL_VERSION);
    return vigil::cli::kExitOk;
  }
  // Out of memory (a trial or an endpoint bigger than this machine) is a message and an exit
  // status, never an abort with a core dump.
  try {
    return run_command(command, args);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "vigil %s: out of memory\n", command.c_str());
    return vigil::cli::kExitFailure;
  }
}
