// `vigil evaluate`: the rule evaluator. Loads all plugins, then runs the rules a job configures
// against a trial, live or after the fact, writing DebugRuleEvaluationStatuses as they change.
// With --isolate each plugin's rules run in a child process: `vigil evaluate --isolated-child`.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

#include <cmath>
#include <iostream>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/plugin_options.h"
#include "common/file_read.h"
#include "common/os.h"
#include "evaluate/evaluator.h"
#include "evaluate/isolated_evaluator.h"
#include "evaluate/isolation_protocol.h"
#include "evaluate/rule_groups.h"
#include "storage/object_store.h"
#include "storage/s3_uri.h"

namespace vigil::cli {
namespace {

constexpr std::string_view kUsage = R"(usage: vigil evaluate [--trial PATH] [--profiler-trial PATH] (--job FILE | --group NAME | --rule NAME [--param KEY=VALUE]...)...
                      [--profile NAME] [--plugins DIR]... [--allow-insecure-plugins] [--status-file FILE] [--output-dir DIR] [--no-follow]
                      [--idle-timeout SECONDS] [--quiet] [--check] [--isolate [--rule-timeout SECONDS] [--rule-memory-limit MIB]]

Runs debugger rules over a trial with smdebug's invoke_rule semantics: steps in order from each
rule's start_step, waiting for new steps while the training job runs, until the end-of-training
marker appears, end_step is reached, or --idle-timeout passes. Each rule's
DebugRuleEvaluationStatus (InProgress, IssuesFound, NoIssuesFound, Error, Stopping, Stopped) is
printed and written to the status file whenever it changes.

Profiler rules (ProfilerRuleConfigurations, the profiler group) read the job's profiler output
folder instead: its system metrics and framework trace files, in time windows of scan_interval_us
(default 60 s), waiting for each window's data while the job runs. They report
ProfilerRuleEvaluationStatuses; their CurrentStep is the window index.

job:
  --job FILE            a JSON job: {"DebugRuleConfigurations": [{"RuleConfigurationName": ...,
                        "RuleParameters": {"rule_to_invoke": ..., <parameters as strings>}}],
                        "ProfilerRuleConfigurations": [... the same shape ...]}
                        (CreateTrainingJob members CheckpointConfig, ResourceConfig,
                        HyperParameters and Distribution are checked for unsupported setups)
                        Without --job, --rule and --group, the job JSON is read from the
                        environment variable VIGIL_JOB_JSON (a container's way to pass it)
  --rule NAME           add a rule by its rule_to_invoke name (repeatable); the built-in profiler
                        rules (vigil rules --group profiler) become profiler rules
  --param KEY=VALUE     a RuleParameters entry for the preceding --rule (start_step, end_step,
                        base_trial, other_trial_N, vigil_profile and the rule's own parameters)
  --name NAME           the RuleConfigurationName of the preceding --rule (default: the rule name)
  --group NAME          add every rule of a SageMaker rule group with its default parameters
                        (vigil rules --groups lists the groups)
  --trial PATH          the base trial of every debug rule without a base_trial parameter (a folder
                        or s3://bucket/prefix, as every trial here: docs/object-storage.md)
  --profiler-trial PATH the profiler output folder (ProfilingParameters.LocalPath, holding system/
                        and framework/) of every profiler rule without a base_trial parameter;
                        default: profiler-output beside a --trial named debug-output
  --profile NAME        the defaults of every rule that sets no vigil_profile parameter of its own:
                        sagemaker (SageMaker's defaults, the default) or calibrated (defaults and
                        evidence requirements chosen against labelled runs: docs/verdict-quality.md)

running:
  --plugins DIR         load plugins from DIR too (absolute path; repeatable); VIGIL_PLUGIN_PATH
                        and the installation's lib/vigil/plugins are always searched
  --allow-insecure-plugins
                        load plugins that another user could write, or that belong to neither you
                        nor root (refused otherwise; VIGIL_ALLOW_INSECURE_PLUGINS=1 does the same)
  --status-file FILE    write {"DebugRuleEvaluationStatuses": [...], "ProfilerRuleEvaluationStatuses":
                        [...]} here (the second list when there are profiler rules), atomically, on
                        every change
  --output-dir DIR      where rules write files of their own, each under DIR/<RuleConfigurationName>/
                        (ProfilerReport: .../profiler-output/profiler-report.html); default: the status
                        file's folder, else the working directory
  --no-follow           treat what exists as the whole trial (a writer that never wrote the marker)
  --idle-timeout SECS   end when no new step has arrived for this long
  --quiet               print only the final statuses
  --check               load the plugins and check the job (rules, parameters, trials), then exit
                        without evaluating: 0 when it would run, 2 with the reason when not
  -h, --help            show this help

fault isolation:
  --isolate             run each plugin's rules in a process of their own (fork+exec of vigil): a
                        rule that crashes, calls exit(), hangs or runs out of memory gets Error and
                        the rules of the other plugins go on with the statuses they would have had
  --rule-timeout SECS   with --isolate: stop a rule whose call (its creation, one step, its
                        destruction) takes longer than this; the rule gets Error
  --rule-memory-limit MIB
                        with --isolate: stop a plugin's process whose own resident memory (not
                        file-backed) grows past MIB mebibytes; its unfinished rules get Error
                        (default 4096; 0: no limit)
  --isolated-child      internal: how --isolate starts its processes (the job's share on stdin,
                        events on fd 3, with --plugin-file FILE); not for direct use

exit status: 0 when the evaluation ran (whatever the rules found), 2 for a bad command line or
job (refused before anything ran), 3 for an internal failure. SIGINT/SIGTERM stop the rules
(Stopping, then Stopped) and exit 0.
)";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "vigil evaluate: %s\n(see vigil evaluate --help)\n", message.c_str());
  return kExitUsage;
}

struct CommandLineRule {
  std::string name;
  std::string configuration_name;
  std::map<std::string, std::string> params;
};

// SIGINT/SIGTERM: a dedicated thread waits for them and asks the rules to stop. It sleeps in
// poll() on a signalfd and an eventfd that wakes it at the end, so that ending costs no wait.
class StopOnSignals {
 public:
  explicit StopOnSignals(bool announce) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    // Blocked before any other thread starts, so that every thread inherits it.
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    signal_fd_.reset(::signalfd(-1, &signals, SFD_CLOEXEC));
    wake_fd_.reset(::eventfd(0, EFD_CLOEXEC));
    waiter_ = std::thread([this, announce] {
      pollfd fds[2] = {{signal_fd_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
      while (os::poll(fds, std::nullopt) == 0) {
      }
      signalfd_siginfo info{};
      if ((fds[0].revents & POLLIN) &&
          os::read_some(signal_fd_.get(), std::span(reinterpret_cast<char*>(&info), sizeof info)).bytes == sizeof info) {
        if (announce)
          std::fprintf(stderr, "vigil: received %s: stopping the rules\n",
                       info.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
        stop_.request_stop();
      }
    });
  }
  ~StopOnSignals() {
    const uint64_t one = 1;
    (void)os::write_some(wake_fd_.get(), std::string_view(reinterpret_cast<const char*>(&one), sizeof one));
    waiter_.join();
  }
  std::stop_token token() const { return stop_.get_token(); }

 private:
  os::UniqueFd signal_fd_;
  os::UniqueFd wake_fd_;
  std::stop_source stop_;
  std::thread waiter_;
};

void print_status(const evaluate::RuleStatus& s) {
  std::string details = s.details;
  while (!details.empty() && details.back() == '\n') details.pop_back();
  // A NoIssuesFound that means "nothing to go on" says so (the status file's Judgement).
  std::string judgement;
  if (s.status == evaluate::RuleEvaluationStatus::NoIssuesFound && !s.judgement.enough_data())
    judgement = s.judgement.reason.empty() ? " (never had the data to judge)"
                                           : " (never had the data to judge: " + s.judgement.reason + ")";
  std::printf("vigil: [%s] %s%s%s%s\n", s.configuration_name.c_str(), std::string(evaluate::status_name(s.status)).c_str(),
              details.empty() ? "" : ": ", details.c_str(), judgement.c_str());
  std::fflush(stdout);
}

// Progress and rule logs on stderr (statuses are printed by the caller).
void print_logs(evaluate::EvaluatorOptions& options, bool quiet) {
  if (!quiet)
    options.on_progress = [](const std::string& path, int64_t step) {
      std::fprintf(stderr, "vigil: %s: step %lld\n", path.c_str(), static_cast<long long>(step));
    };
  options.on_log = [quiet](const std::string& rule, int level, const std::string& message) {
    if (level < VIGIL_LOG_INFO || (quiet && level < VIGIL_LOG_WARNING)) return;
    std::fprintf(stderr, "vigil: %s%s%s\n", rule.empty() ? "" : "[", rule.c_str(), rule.empty() ? "" : "] ");
    std::fprintf(stderr, "  %s\n", message.c_str());
  };
}

// `vigil evaluate --isolated-child`: one plugin's share of an --isolate job. The parent hands the
// rules over on stdin and reads every event from fd 3; the statuses are the parent's to print.
int run_isolated_child(const std::vector<std::string>& plugin_files, plugin_host::LoadOptions load, bool quiet) {
  // Nobody would read the events once the parent is gone.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Processes the rules start must not hold the events pipe open.
  if (::fcntl(evaluate::kChildEventsFd, F_SETFD, FD_CLOEXEC) != 0) {
    std::fprintf(stderr, "vigil evaluate: --isolated-child is internal to --isolate (no events fd %d)\n",
                 evaluate::kChildEventsFd);
    return kExitUsage;
  }
  std::ostringstream text;
  text << std::cin.rdbuf();
  auto work = evaluate::decode_child_work(text.str());
  if (!work) {
    std::fprintf(stderr, "vigil evaluate: %s\n", work.error().message.c_str());
    return kExitUsage;
  }
  plugin_host::PluginRegistry registry(load);
  for (const auto& file : plugin_files) (void)registry.load_file(file);
  print_refusals(registry, stderr);

  evaluate::EvaluatorOptions options;
  options.follow = work->follow;
  options.idle_timeout = work->idle_timeout;
  options.poll_interval = work->poll_interval;
  options.output_directory = work->output_directory;
  print_logs(options, quiet);
  evaluate::ChildEventWriter events(evaluate::kChildEventsFd, work->job);
  events.attach(options);
  auto evaluator = evaluate::Evaluator::create(registry, std::move(work->job), options);
  if (!evaluator) {
    std::fprintf(stderr, "vigil evaluate: %s\n", evaluator.error().message.c_str());
    return kExitUsage;
  }
  StopOnSignals signals(/*announce=*/false);  // the parent announced it
  (*evaluator)->run(signals.token());
  return kExitOk;
}

std::optional<double> parse_seconds(const std::string& text) {
  char* end = nullptr;
  double secs = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(secs >= 0) || !std::isfinite(secs)) return std::nullopt;
  return secs;
}

// SageMaker's layout puts <job>/debug-output and <job>/profiler-output side by side (sagemaker-api
// §3), in a local folder or under an S3 prefix: the profiler output beside a trial named
// debug-output, when it is there (S3: when any key is under it; one listing). A lookup that fails
// is a warning: the debug rules need no profiler output.
std::optional<std::string> profiler_output_beside(const std::string& trial) {
  std::string job;      // the folder or prefix holding debug-output
  std::string beside;  // job's profiler-output, named as the trial is
  if (storage::is_s3_uri(trial)) {
    auto uri = storage::parse_s3_uri(trial);
    if (!uri) return std::nullopt;
    const size_t slash = uri->prefix.rfind('/');
    const std::string name = slash == std::string::npos ? uri->prefix : uri->prefix.substr(slash + 1);
    if (name != "debug-output") return std::nullopt;
    job = storage::S3Uri{uri->bucket, slash == std::string::npos ? "" : uri->prefix.substr(0, slash)}.to_string();
    beside = job + "/profiler-output";
  } else {
    const std::filesystem::path t = std::filesystem::path(trial).lexically_normal();
    const auto base = t.has_filename() ? t : t.parent_path();
    if (base.filename() != "debug-output") return std::nullopt;
    job = base.parent_path().empty() ? "." : base.parent_path().string();
    beside = (base.parent_path() / "profiler-output").string();
  }
  auto store = storage::open_object_store(job);
  if (!store) return std::nullopt;  // no local job folder: nothing beside the trial
  auto exists = (*store)->folder_exists("profiler-output");
  if (!exists) {
    std::fprintf(stderr, "vigil evaluate: warning: cannot look for profiler-output beside %s: %s\n", trial.c_str(),
                 exists.error().message.c_str());
    return std::nullopt;
  }
  if (!*exists) return std::nullopt;
  return beside;
}

}  // namespace

int run_evaluate(const std::vector<std::string>& args) {
  std::optional<std::string> job_file, trial, profiler_trial, status_file, profile, output_dir;
  std::vector<std::string> plugin_dirs;
  std::vector<CommandLineRule> cli_rules;
  std::vector<std::string> groups;
  evaluate::EvaluatorOptions options;
  bool quiet = false, check_only = false;
  bool isolate = false, isolated_child = false;
  bool allow_insecure = false;
  std::optional<std::chrono::milliseconds> rule_timeout;
  std::optional<uint64_t> memory_limit_mib;
  std::vector<std::string> plugin_files;  // --isolated-child only
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
    } else if (a == "--check") {
      check_only = true;
    } else if (a == "--isolate") {
      isolate = true;
    } else if (a == "--isolated-child") {
      isolated_child = true;
    } else if (a == kAllowInsecurePlugins) {
      allow_insecure = true;
    } else if (a == "--job" || a == "--trial" || a == "--status-file" || a == "--plugins" || a == "--rule" ||
               a == "--param" || a == "--name" || a == "--idle-timeout" || a == "--group" || a == "--rule-timeout" ||
               a == "--rule-memory-limit" || a == "--plugin-file" || a == "--profile" || a == "--profiler-trial" ||
               a == "--output-dir") {
      auto v = value();
      if (!v) return usage_error(a + " needs a value");
      if (a == "--job") job_file = *v;
      else if (a == "--profile") profile = *v;
      else if (a == "--plugin-file") plugin_files.push_back(*v);
      else if (a == "--rule-timeout") {
        auto secs = parse_seconds(*v);
        if (!secs || std::llround(*secs * 1000) < 1) return usage_error("--rule-timeout takes seconds (at least 0.001)");
        rule_timeout = std::chrono::milliseconds(std::llround(*secs * 1000));
      } else if (a == "--rule-memory-limit") {
        uint64_t mib = 0;
        auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), mib);
        if (ec != std::errc() || end != v->data() + v->size() || mib > (uint64_t(1) << 40))
          return usage_error("--rule-memory-limit takes a whole number of MiB (0: no limit)");
        memory_limit_mib = mib;
      }
      else if (a == "--trial") trial = *v;
      else if (a == "--profiler-trial") profiler_trial = *v;
      else if (a == "--status-file") status_file = *v;
      else if (a == "--output-dir") output_dir = *v;
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
  if (isolated_child) {
    if (isolate || job_file || trial || profiler_trial || status_file || output_dir || !plugin_dirs.empty() || !cli_rules.empty() ||
        !groups.empty() || plugin_files.empty())
      return usage_error("--isolated-child is internal to --isolate and takes only --plugin-file, "
                         "--allow-insecure-plugins and --quiet");
    return run_isolated_child(plugin_files, load_options(allow_insecure), quiet);
  }
  if (!plugin_files.empty()) return usage_error("--plugin-file is internal to --isolate; use --plugins DIR");
  if (!isolate && (rule_timeout || memory_limit_mib))
    return usage_error(std::string(rule_timeout ? "--rule-timeout" : "--rule-memory-limit") +
                       " needs --isolate: a rule that never returns or grows without bound can only be stopped in a "
                       "process of its own");
  for (const auto& g : groups) {
    const auto* group = evaluate::find_rule_group(g);
    if (!group) return usage_error("unknown rule group '" + g + "' (vigil rules --groups lists them)");
    for (auto name : group->rules) cli_rules.push_back({std::string(name), std::string(name), {}});
  }
  // A container (docs/image.md) may hand the job over as a variable rather than a mounted file.
  std::optional<std::string> job_from_env;
  if (!job_file && cli_rules.empty())
    if (const char* env = std::getenv("VIGIL_JOB_JSON"); env != nullptr && *env != '\0') job_from_env = env;
  if (!job_file && !job_from_env && cli_rules.empty())
    return usage_error("give --job FILE, --group NAME or --rule NAME (or the job JSON in VIGIL_JOB_JSON)");
  if (!profiler_trial && trial) profiler_trial = profiler_output_beside(*trial);

  evaluate::JobConfig job;
  if (job_file) {
    auto text = read_whole_file(*job_file);
    if (!text) return usage_error("cannot read the job file " + *job_file + ": " + text.error().message);
    auto parsed = evaluate::parse_job_json(*text, trial.value_or(""), profiler_trial.value_or(""));
    if (!parsed) return usage_error("invalid job " + *job_file + ": " + parsed.error().message);
    job = std::move(*parsed);
    evaluate::anchor_rule_files(job, *job_file);
  } else if (job_from_env) {
    // Rule files named relatively resolve against the working directory: there is no job file.
    auto parsed = evaluate::parse_job_json(*job_from_env, trial.value_or(""), profiler_trial.value_or(""));
    if (!parsed) return usage_error("invalid job in VIGIL_JOB_JSON: " + parsed.error().message);
    job = std::move(*parsed);
  }
  for (size_t k = 0; k < cli_rules.size(); ++k) {
    auto params = cli_rules[k].params;
    params["rule_to_invoke"] = cli_rules[k].name;
    const auto kind = evaluate::builtin_rule_kind(cli_rules[k].name);
    auto rule = evaluate::rule_from_parameters(
        cli_rules[k].configuration_name, params,
        (kind == evaluate::RuleKind::Profiler ? profiler_trial : trial).value_or(""),
        fmt::format("--rule {}", cli_rules[k].name), kind);
    if (!rule) return usage_error(rule.error().message);
    job.rules.push_back(std::move(*rule));
  }
  if (profile)
    if (auto p = evaluate::apply_default_profile(job, *profile); !p) return usage_error(p.error().message);

  auto registry = load_plugins(plugin_dirs, load_options(allow_insecure));
  print_refusals(registry, stderr);

  if (status_file) options.status_file = *status_file;
  if (output_dir) options.output_directory = std::filesystem::absolute(*output_dir);
  if (!quiet) options.on_status = print_status;
  print_logs(options, quiet);

  // The same for both evaluators: refuse a bad job, run to the end, report.
  auto run_to_end = [&](auto evaluator) -> int {
    if (!evaluator) {
      if (evaluator.error().code == ErrorCode::Io) {
        std::fprintf(stderr, "vigil evaluate: %s\n", evaluator.error().message.c_str());
        return kExitInternal;
      }
      return usage_error(evaluator.error().message);
    }
    if (check_only) return kExitOk;
    {
      StopOnSignals signals(/*announce=*/true);
      (*evaluator)->run(signals.token());
    }
    if (quiet)
      for (const auto& s : (*evaluator)->statuses()) print_status(s);
    if (status_file && !std::filesystem::exists(*status_file)) {
      std::fprintf(stderr, "vigil evaluate: the status file %s could not be written\n", status_file->c_str());
      return kExitInternal;
    }
    return kExitOk;
  };
  if (isolate) {
    evaluate::IsolationOptions isolation;
    isolation.rule_timeout = rule_timeout;
    if (memory_limit_mib) isolation.memory_limit_mib = *memory_limit_mib;
    if (quiet) isolation.child_arguments.push_back("--quiet");
    if (allow_insecure) isolation.child_arguments.push_back(kAllowInsecurePlugins);
    return run_to_end(evaluate::IsolatedEvaluator::create(registry, std::move(job), options, std::move(isolation)));
  }
  return run_to_end(evaluate::Evaluator::create(registry, std::move(job), options));
}

}  // namespace vigil::cli
