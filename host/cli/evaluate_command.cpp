// `vigil evaluate`: the rule evaluator. Loads all plugins, then runs the rules a job configures
// against a trial, live or after the fact, writing DebugRuleEvaluationStatuses as they change.
#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/plugin_options.h"
#include "evaluate/evaluator.h"
#include "evaluate/rule_groups.h"

namespace vigil::cli {
namespace {

constexpr std::string_view kUsage = R"(usage: vigil evaluate --trial PATH (--job FILE | --group NAME | --rule NAME [--param KEY=VALUE]...)...
                      [--plugins DIR]... [--status-file FILE] [--no-follow] [--idle-timeout SECONDS] [--quiet]

Runs debugger rules over a trial with smdebug's invoke_rule semantics: steps in order from each
rule's start_step, waiting for new steps while the training job runs, until the end-of-training
marker appears, end_step is reached, or --idle-timeout passes. Each rule's
DebugRuleEvaluationStatus (InProgress, IssuesFound, NoIssuesFound, Error, Stopping, Stopped) is
printed and written to the status file whenever it changes.

job:
  --job FILE            a JSON job: {"DebugRuleConfigurations": [{"RuleConfigurationName": ...,
                        "RuleParameters": {"rule_to_invoke": ..., <parameters as strings>}}]}
                        (CreateTrainingJob members CheckpointConfig, ResourceConfig,
                        HyperParameters and Distribution are checked for unsupported setups)
  --rule NAME           add a rule by its rule_to_invoke name (repeatable)
  --param KEY=VALUE     a RuleParameters entry for the preceding --rule (start_step, end_step,
                        base_trial, other_trial_N and the rule's own parameters)
  --name NAME           the RuleConfigurationName of the preceding --rule (default: the rule name)
  --group NAME          add every rule of a SageMaker rule group with its default parameters
                        (vigil rules --groups lists the groups)
  --trial PATH          the base trial of every rule without a base_trial parameter

running:
  --plugins DIR         load plugins from DIR too (absolute path; repeatable); VIGIL_PLUGIN_PATH
                        and the installation's lib/vigil/plugins are always searched
  --status-file FILE    write {"DebugRuleEvaluationStatuses": [...]} here, atomically, on every change
  --no-follow           treat what exists as the whole trial (a writer that never wrote the marker)
  --idle-timeout SECS   end when no new step has arrived for this long
  --quiet               print only the final statuses
  -h, --help            show this help

exit status: 0 when the evaluation ran (whatever the rules found), 2 for a bad command line or
job (refused before anything ran), 3 for an internal failure. SIGINT/SIGTERM stop the rules
(Stopping, then Stopped) and exit 0.
)";

std::string read_file(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = bool(in);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "vigil evaluate: %s\n(see vigil evaluate --help)\n", message.c_str());
  return kExitUsage;
}

struct CommandLineRule {
  std::string name;
  std::string configuration_name;
  std::map<std::string, std::string> params;
};

void print_status(const evaluate::RuleStatus& s) {
  std::string details = s.details;
  while (!details.empty() && details.back() == '\n') details.pop_back();
  std::printf("vigil: [%s] %s%s%s\n", s.configuration_name.c_str(), std::string(evaluate::status_name(s.status)).c_str(),
              details.empty() ? "" : ": ", details.c_str());
  std::fflush(stdout);
}

}  // namespace

int run_evaluate(const std::vector<std::string>& args) {
  std::optional<std::string> job_file, trial, status_file;
  std::vector<std::string> plugin_dirs;
  std::vector<CommandLineRule> cli_rules;
  std::vector<std::string> groups;
  evaluate::EvaluatorOptions options;
  bool quiet = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage.data(), stdout);
      return kExitOk;
    } else if (a == "--no-follow") {
      options.follow = false;
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a == "--job" || a == "--trial" || a == "--status-file" || a == "--plugins" || a == "--rule" ||
               a == "--param" || a == "--name" || a == "--idle-timeout" || a == "--group") {
      auto v = value();
      if (!v) return usage_error(a + " needs a value");
      if (a == "--job") job_file = *v;
      else if (a == "--trial") trial = *v;
      else if (a == "--status-file") status_file = *v;
      else if (a == "--plugins") plugin_dirs.push_back(*v);
      else if (a == "--rule") cli_rules.push_back({*v, *v, {}});
      else if (a == "--group") groups.push_back(*v);
      else if (a == "--name" || a == "--param") {
        if (cli_rules.empty()) return usage_error(a + " must follow a --rule");
        if (a == "--name") {
          cli_rules.back().configuration_name = *v;
        } else {
          auto eq = v->find('=');
          if (eq == std::string::npos || eq == 0) return usage_error("--param takes KEY=VALUE, got '" + *v + "'");
          cli_rules.back().params[v->substr(0, eq)] = v->substr(eq + 1);
        }
      } else if (a == "--idle-timeout") {
        char* end = nullptr;
        double secs = std::strtod(v->c_str(), &end);
        if (end != v->c_str() + v->size() || !(secs >= 0)) return usage_error("--idle-timeout takes seconds");
        options.idle_timeout = std::chrono::milliseconds(int64_t(secs * 1000));
      }
    } else {
      return usage_error("unexpected argument '" + a + "'");
    }
  }
  for (const auto& g : groups) {
    const auto* group = evaluate::find_rule_group(g);
    if (!group) return usage_error("unknown rule group '" + g + "' (vigil rules --groups lists them)");
    for (auto name : group->rules) cli_rules.push_back({std::string(name), std::string(name), {}});
  }
  if (!job_file && cli_rules.empty()) return usage_error("give --job FILE, --group NAME or --rule NAME");

  evaluate::JobConfig job;
  if (job_file) {
    bool ok = false;
    std::string text = read_file(*job_file, ok);
    if (!ok) return usage_error("cannot read the job file " + *job_file);
    auto parsed = evaluate::parse_job_json(text, trial.value_or(""));
    if (!parsed) return usage_error("invalid job " + *job_file + ": " + parsed.error().message);
    job = std::move(*parsed);
  }
  for (size_t k = 0; k < cli_rules.size(); ++k) {
    auto params = cli_rules[k].params;
    params["rule_to_invoke"] = cli_rules[k].name;
    auto rule = evaluate::rule_from_parameters(cli_rules[k].configuration_name, params, trial.value_or(""),
                                               fmt::format("--rule {}", cli_rules[k].name));
    if (!rule) return usage_error(rule.error().message);
    job.rules.push_back(std::move(*rule));
  }

  auto registry = load_plugins(plugin_dirs);
  print_refusals(registry, stderr);

  if (status_file) options.status_file = *status_file;
  if (!quiet) {
    options.on_status = print_status;
    options.on_progress = [](const std::string& path, int64_t step) {
      std::fprintf(stderr, "vigil: %s: step %lld\n", path.c_str(), static_cast<long long>(step));
    };
  }
  options.on_log = [quiet](const std::string& rule, int level, const std::string& message) {
    if (level < VIGIL_LOG_INFO || (quiet && level < VIGIL_LOG_WARNING)) return;
    std::fprintf(stderr, "vigil: %s%s%s\n", rule.empty() ? "" : "[", rule.c_str(), rule.empty() ? "" : "] ");
    std::fprintf(stderr, "  %s\n", message.c_str());
  };

  auto evaluator = evaluate::Evaluator::create(registry, std::move(job), options);
  if (!evaluator) {
    if (evaluator.error().code == ErrorCode::Io) {
      std::fprintf(stderr, "vigil evaluate: %s\n", evaluator.error().message.c_str());
      return kExitInternal;
    }
    return usage_error(evaluator.error().message);
  }

  // SIGINT/SIGTERM: a dedicated thread waits for them and asks the rules to stop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop;
  std::jthread signal_waiter([&](std::stop_token self) {
    timespec slice{0, 100'000'000};
    while (!self.stop_requested()) {
      siginfo_t info;
      int sig = sigtimedwait(&signals, &info, &slice);
      if (sig == SIGINT || sig == SIGTERM) {
        std::fprintf(stderr, "vigil: received %s: stopping the rules\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        stop.request_stop();
        return;
      }
    }
  });
  (*evaluator)->run(stop.get_token());
  signal_waiter.request_stop();
  signal_waiter.join();

  if (quiet)
    for (const auto& s : (*evaluator)->statuses()) print_status(s);
  if (status_file && !std::filesystem::exists(*status_file)) {
    std::fprintf(stderr, "vigil evaluate: the status file %s could not be written\n", status_file->c_str());
    return kExitInternal;
  }
  return kExitOk;
}

}  // namespace vigil::cli
