"""``vigil fleet``: evaluates the same rule configurations over many trials on a ``dask.distributed``
cluster and gathers the statuses into one table.

    vigil fleet --rule VanishingGradient --output results.parquet 's3://trials/sweep/*/debug-output'
    vigil fleet --job rules.json --scheduler tcp://scheduler:8786 /data/runs/*/debug-output

    import vigil.fleet
    table = vigil.fleet.run(["/data/a", "/data/b"], rules=["VanishingGradient"], output_dir="fleet-out")

Each trial is one Dask task that runs ``vigil evaluate --no-follow`` on it as a subprocess: a rule
plugin that crashes takes its evaluation down, never the worker, and the status file gives
SageMaker's DebugRuleEvaluationStatuses shapes. A trial that is missing, corrupt or unreadable is one
row with status Error and the reason; it never fails the fleet. A task whose evaluation failed on a
transient S3 error (the evaluator's own retries spent) is run again, at most ``retries`` times
(Dask's ``retries=``: the task raises only then). The C++ ``vigil`` forwards ``vigil fleet`` here
(``python -m vigil.fleet``). Needs the ``fleet`` extra (``pip install vigil[fleet]``). docs/fleet.md.
"""
import argparse
import contextlib
import fnmatch
import glob
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid

from . import installation

__all__ = ["COLUMNS", "expand_trials", "evaluate_trial", "run", "write_summary", "main"]

# The table's columns, one row per trial and rule configuration (one row per failed trial).
COLUMNS = ["trial", "rule_configuration_name", "rule", "status", "status_details", "last_step", "elapsed_s",
           "error", "output_dir"]

_STATUS_LISTS = ("DebugRuleEvaluationStatuses", "ProfilerRuleEvaluationStatuses")
# What the S3 client says once its own retries of a retryable fault are spent (host/storage/s3_client.cpp:
# "... after N attempts"): the only failures a task is run again for.
_TRANSIENT = re.compile(r"s3://\S+.*\bafter \d+ attempts?\b")
_MAX_ERROR = 2000  # characters of a failed evaluation's message kept in its row


class UsageError(ValueError):
    """A bad command line or job: refused before any trial runs (exit status 2)."""


class TransientS3Error(RuntimeError):
    """An evaluation that failed on a transient S3 error: the task raises it so that Dask runs it again."""


# ---------------------------------------------------------------------------------------------------
# Trials


def _split_s3_pattern(pattern):
    """'s3://b/p/*/debug-output' -> ('s3://b/p', '*/debug-output'): the fixed prefix to list, the rest."""
    parts = pattern[len("s3://"):].split("/")
    fixed = []
    for part in parts:
        if glob.has_magic(part):
            break
        fixed.append(part)
    rest = parts[len(fixed):]
    if len(fixed) < 1 or not fixed[0]:
        raise UsageError("{}: no bucket".format(pattern))
    return "s3://" + "/".join(fixed), rest


def _expand_s3(pattern, list_files):
    prefix, rest = _split_s3_pattern(pattern)
    if not rest:
        return [pattern]
    found = set()
    # S3 has no folders: a trial is a prefix whose path segments match the pattern's and under which
    # there are keys. Every key under the fixed prefix is listed once.
    for relpath in list_files(prefix):
        segments = relpath.split("/")
        if len(segments) > len(rest) and all(fnmatch.fnmatchcase(s, p) for s, p in zip(segments, rest)):
            found.add(prefix + "/" + "/".join(segments[:len(rest)]))
    return sorted(found)


def expand_trials(patterns, list_files=None):
    """The trials that `patterns` name, in order, each once: a path (a folder or s3://bucket/prefix)
    stands for itself even when it does not exist (its row then says so); a local glob
    (``/runs/*/debug-output``) names the folders it matches; ``s3://bucket/prefix/*/debug-output``
    lists the bucket under the fixed part (through Vigil's own S3 access) and names each matching
    prefix that holds objects. A pattern that matches nothing is refused (UsageError)."""
    if list_files is None:
        from . import _vigil
        list_files = _vigil.list_files
    out, seen = [], set()
    for pattern in patterns:
        if pattern.startswith("s3://"):
            matches = _expand_s3(pattern, list_files) if glob.has_magic(pattern) else [pattern.rstrip("/")]
        elif glob.has_magic(pattern):
            matches = sorted(p for p in glob.glob(os.path.expanduser(pattern)) if os.path.isdir(p))
        else:
            matches = [pattern]
        if not matches:
            raise UsageError("{}: matches no trial".format(pattern))
        for m in matches:
            if m not in seen:
                seen.add(m)
                out.append(m)
    return out


# ---------------------------------------------------------------------------------------------------
# One trial: the Dask task


def _error_row(trial, out_dir, error, elapsed=0.0):
    return {"trial": trial, "rule_configuration_name": None, "rule": None, "status": "Error",
            "status_details": None, "last_step": None, "elapsed_s": round(elapsed, 3), "error": error,
            "output_dir": out_dir}


def _tail(text):
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("(see vigil evaluate --help")]
    message = "; ".join(lines[-3:])
    return message if len(message) <= _MAX_ERROR else "..." + message[-_MAX_ERROR:]


def evaluate_trial(trial, evaluate_args, out_dir, timeout=None):
    """Runs ``vigil evaluate --no-follow --trial TRIAL EVALUATE_ARGS`` with its status file and rule
    outputs in `out_dir`, and returns the trial's rows (dicts with COLUMNS). A trial that could not be
    evaluated is one row with status Error and the reason. Raises TransientS3Error when the evaluation
    failed on a transient S3 error, so that the task is retried. `evaluate_args` is the job
    (``--job FILE`` or ``--rule NAME [--param K=V]...``) and the running options (``--profile``,
    ``--plugins``); a job given as ``("--job-json", TEXT)`` is written into `out_dir` first (a remote
    worker need not see the client's files)."""
    start = time.monotonic()
    if not trial.startswith("s3://") and not os.path.isdir(trial):
        return [_error_row(trial, out_dir, "missing: no such folder" if not os.path.exists(trial)
                           else "unreadable: not a folder")]
    if trial.startswith("s3://"):
        from . import _vigil
        try:
            exists = _vigil.location_exists(trial)
        except Exception:  # credentials, the endpoint: the evaluator says what is wrong, after its retries
            exists = True
        if not exists:  # the evaluator would wait for its files, then fail on a time-out
            return [_error_row(trial, out_dir, "missing: no object under the prefix")]
    exe = os.environ.get("VIGIL_EXECUTABLE") or installation.executable()
    if not exe:
        return [_error_row(trial, out_dir, "no vigil command on this worker (install vigil, or set VIGIL_EXECUTABLE)")]
    os.makedirs(out_dir, exist_ok=True)
    args = list(evaluate_args)
    if args[:1] == ["--job-json"]:
        job_path = os.path.join(out_dir, "job.json")
        with open(job_path, "w") as f:
            f.write(args[1])
        args = ["--job", job_path] + args[2:]
    status_file = os.path.join(out_dir, "statuses.json")
    if os.path.exists(status_file):
        os.unlink(status_file)  # a retry or a rerun into the same folder: never read an old file
    cmd = [exe, "evaluate", "--trial", trial, "--no-follow", "--quiet", "--status-file", status_file,
           "--output-dir", out_dir] + args
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return [_error_row(trial, out_dir, "timed out after {:g} s".format(timeout), time.monotonic() - start)]
    elapsed = time.monotonic() - start
    with open(os.path.join(out_dir, "evaluate.log"), "w") as f:
        f.write(proc.stdout + proc.stderr)
    statuses = []
    if proc.returncode == 0 and os.path.exists(status_file):
        with open(status_file) as f:
            doc = json.load(f)
        for key in _STATUS_LISTS:
            statuses.extend(doc.get(key) or [])
    for text in [proc.stderr] + [s.get("StatusDetails") or "" for s in statuses if s.get("RuleEvaluationStatus") == "Error"]:
        if _TRANSIENT.search(text):
            raise TransientS3Error(_tail(text))
    if proc.returncode != 0 or not statuses:
        reason = _tail(proc.stderr) or "vigil evaluate exited with status {}".format(proc.returncode)
        return [_error_row(trial, out_dir, reason, elapsed)]
    # Every rule stopped by the same error: the trial itself could not be read (a corrupt index, an
    # unreadable event file), one row for it as for a missing one. A rule's own error keeps its row.
    details = {s.get("StatusDetails") for s in statuses}
    if all(s.get("RuleEvaluationStatus") == "Error" for s in statuses) and len(details) == 1 and None not in details:
        return [_error_row(trial, out_dir, details.pop(), elapsed)]
    return [{"trial": trial, "rule_configuration_name": s.get("RuleConfigurationName"), "rule": s.get("RuleToInvoke"),
             "status": s.get("RuleEvaluationStatus"), "status_details": s.get("StatusDetails"),
             "last_step": s.get("CurrentStep"), "elapsed_s": round(elapsed, 3), "error": None, "output_dir": out_dir}
            for s in statuses]


# ---------------------------------------------------------------------------------------------------
# The fleet


def _slug(trial):
    tail = "-".join(p for p in trial.rstrip("/").split("/")[-2:] if p)
    return re.sub(r"[^A-Za-z0-9._-]+", "_", tail)[-60:] or "trial"


def _job_arguments(job, rules, profile, plugins):
    """The job as `vigil evaluate` arguments (what each task passes on), checked here."""
    if (job is None) == (not rules):
        raise UsageError("give a job (--job FILE) or rules (--rule NAME), not both")
    if job is not None:
        if isinstance(job, dict):
            text = json.dumps(job)
        else:
            try:
                with open(job) as f:
                    text = f.read()
                json.loads(text)
            except OSError as e:
                raise UsageError("cannot read the job file {}: {}".format(job, e.strerror)) from None
            except ValueError as e:
                raise UsageError("invalid job {}: not JSON: {}".format(job, e)) from None
        args = ["--job-json", text]
    else:
        args = []
        for rule in rules:
            if isinstance(rule, str):
                rule = {"rule": rule}
            args += ["--rule", rule["rule"]]
            if rule.get("name"):
                args += ["--name", rule["name"]]
            for key, value in (rule.get("params") or {}).items():
                args += ["--param", "{}={}".format(key, value)]
    if profile:
        args += ["--profile", profile]
    for d in plugins or ():
        args += ["--plugins", os.path.abspath(d)]
    return args


def _check_job(evaluate_args, out_dir):
    """`vigil evaluate --check` on the job once, here: a bad job is refused before any task runs."""
    exe = os.environ.get("VIGIL_EXECUTABLE") or installation.executable()
    if not exe:
        raise UsageError("no vigil command found beside this package (set VIGIL_EXECUTABLE)")
    args = list(evaluate_args)
    if args[:1] == ["--job-json"]:
        path = os.path.join(out_dir, "job.json")
        with open(path, "w") as f:
            f.write(args[1])
        args = ["--job", path] + args[2:]
    # --check wants the trials to exist: an empty folder stands for every trial
    with tempfile.TemporaryDirectory(prefix="vigil-fleet-check-") as empty:
        proc = subprocess.run([exe, "evaluate", "--check", "--trial", empty, "--profiler-trial", empty] + args,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        raise UsageError(_tail(proc.stderr) or "vigil evaluate --check exited with status {}".format(proc.returncode))


def run(trials, job=None, rules=None, output_dir="vigil-fleet", scheduler=None, n_workers=None, retries=2,
        timeout=None, profile=None, plugins=None, progress=False):
    """Evaluates `job` (a DebugRuleConfigurations file or dict) or `rules` (names, or dicts with
    ``rule``, ``name``, ``params``) over `trials` (paths and patterns: expand_trials) on a Dask cluster:
    the scheduler at `scheduler` (an address, or a ``dask.distributed.Client``), else a LocalCluster of
    `n_workers` processes of one thread each. Each trial's status file, log and rule outputs go to its
    own folder under `output_dir`, beside ``index.html`` (write_summary). Returns the table, a pandas
    DataFrame with COLUMNS, in the trials' order."""
    import pandas as pd
    from dask.distributed import Client, LocalCluster

    trial_list = expand_trials([trials] if isinstance(trials, str) else list(trials))
    output_dir = os.path.abspath(output_dir)
    os.makedirs(output_dir, exist_ok=True)
    evaluate_args = _job_arguments(job, rules, profile, plugins)
    _check_job(evaluate_args, output_dir)
    out_dirs = [os.path.join(output_dir, "trials", "{:05d}-{}".format(i, _slug(t))) for i, t in enumerate(trial_list)]

    cluster = None
    if scheduler is None:
        import logging
        cluster = LocalCluster(n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.CRITICAL)
        client = Client(cluster)
    elif isinstance(scheduler, str):
        client = Client(scheduler)
    else:
        client = scheduler
    try:
        token = uuid.uuid4().hex[:12]  # keys unique on a shared cluster, fleet after fleet
        futures = [client.submit(evaluate_trial, t, evaluate_args, d, timeout, retries=retries,
                                 key="vigil-fleet-{}-{:05d}-{}".format(token, i, _slug(t)))
                   for i, (t, d) in enumerate(zip(trial_list, out_dirs))]
        if progress:
            from dask.distributed import progress as show_progress
            with contextlib.redirect_stdout(sys.stderr):  # Dask's bar writes to stdout: the table's place
                show_progress(futures)
        rows = []
        for trial, out_dir, future in zip(trial_list, out_dirs, futures):
            try:
                rows.extend(future.result())
            except Exception as e:  # retries spent, or the task itself failed: the trial's row says so
                rows.append(_error_row(trial, out_dir, "{}: {}{}".format(
                    type(e).__name__, e, " (retries: {})".format(retries) if isinstance(e, TransientS3Error) else "")))
    finally:
        if client is not scheduler:
            client.close()
        if cluster is not None:
            cluster.close()
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["last_step"] = table["last_step"].astype("Int64")  # a step is a whole number, missing in failed rows
    write_summary(table, output_dir)
    return table


def counts(table):
    """Per rule configuration, how many trials got each status (a DataFrame; failed trials under '(trial failed)')."""
    import pandas as pd
    names = table["rule_configuration_name"].fillna("(trial failed)")
    return pd.crosstab(names, table["status"]).rename_axis(index="rule_configuration_name", columns=None)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>vigil fleet: {n} trials</title>
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse;margin-bottom:1.5em}}
td,th{{border:1px solid #ccc;padding:.25em .6em;text-align:left}}.IssuesFound,.Error{{color:#b00}}
.NoIssuesFound{{color:#070}}</style></head><body>
<h1>vigil fleet: {n} trials, {failed} failed</h1>
<h2>Statuses per rule configuration</h2>
{counts}
<h2>Trials</h2>
{rows}
</body></html>
"""


def write_summary(table, output_dir):
    """``OUTPUT_DIR/index.html``: the per-rule counts and one line per row, linking each trial's status
    file, evaluator log and rule outputs (relative links: the folder can be moved or served)."""
    import pandas as pd
    c = counts(table)
    count_html = ["<table><tr><th>rule configuration</th>"] + ["<th>{}</th>".format(html.escape(str(s))) for s in c.columns]
    count_html.append("</tr>")
    for name, row in c.iterrows():
        count_html.append("<tr><td>{}</td>{}</tr>".format(html.escape(str(name)), "".join(
            "<td class=\"{0}\">{1}</td>".format(html.escape(str(s)), int(row[s])) for s in c.columns)))
    count_html.append("</table>")
    lines = ["<table><tr><th>trial</th><th>rule configuration</th><th>status</th><th>details</th><th>last step</th>"
             "<th>seconds</th><th>files</th></tr>"]
    for record in table.to_dict("records"):
        r = {k: (None if not isinstance(v, str) and pd.isna(v) else v) for k, v in record.items()}  # NaN, NA: none
        rel = os.path.relpath(r["output_dir"], output_dir) if r["output_dir"] else None
        name = r["rule_configuration_name"]
        links = []
        if rel:
            for file, label in (("statuses.json", "statuses"), ("evaluate.log", "log")):
                if os.path.exists(os.path.join(r["output_dir"], file)):
                    links.append('<a href="{}">{}</a>'.format(html.escape(rel + "/" + file), label))
            if name and os.path.isdir(os.path.join(r["output_dir"], name)):
                links.append('<a href="{}/">outputs</a>'.format(html.escape(rel + "/" + name)))
        detail = r["error"] or r["status_details"] or ""
        step = "" if r["last_step"] is None or pd.isna(r["last_step"]) else str(int(r["last_step"]))
        lines.append("<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
            html.escape(r["trial"]), html.escape(name or ""), html.escape(r["status"]), html.escape(r["status"]),
            html.escape(detail), step, r["elapsed_s"], " ".join(links)))
    lines.append("</table>")
    failed = int(table["rule_configuration_name"].isna().sum())
    path = os.path.join(output_dir, "index.html")
    with open(path, "w") as f:
        f.write(_PAGE.format(n=table["trial"].nunique(), failed=failed, counts="\n".join(count_html),
                             rows="\n".join(lines)))
    return path


# ---------------------------------------------------------------------------------------------------
# The command


_DESCRIPTION = """Evaluates the same rules over many trials on a Dask cluster (a LocalCluster here by
default, or --scheduler ADDRESS) and gathers the statuses into one table: one row per trial and rule
configuration. Each trial is `vigil evaluate --no-follow` run as a subprocess on a worker, its status
file, log and rule outputs in a folder of its own under --output-dir, beside index.html (the counts
per rule and a link to each trial's files). A trial that is missing, corrupt or unreadable is one row
with status Error and the reason, and the others go on. Needs the fleet extra: pip install vigil[fleet]."""

_EPILOG = """trials: paths (folders or s3://bucket/prefix), local globs (quote them or let the shell
expand them) and s3:// patterns such as 's3://bucket/sweep/*/debug-output' (the bucket is listed under
the part before the first wildcard).

exit status: 0 when the fleet ran (whatever the rules found, failed trials included), 2 for a bad
command line or job (refused before any trial ran), 1 when the cluster could not be used.

example: vigil fleet --rule VanishingGradient --output results.parquet '/data/runs/*/debug-output'"""


class _OrderedRule(argparse.Action):
    """--rule, --name and --param in the order given: --name and --param belong to the --rule before them."""

    def __call__(self, parser, namespace, value, option_string=None):
        rules = getattr(namespace, "rules") or []
        if option_string == "--rule":
            rules.append({"rule": value, "params": {}})
        elif not rules:
            parser.error("{} must follow a --rule".format(option_string))
        elif option_string == "--name":
            rules[-1]["name"] = value
        else:
            key, eq, v = value.partition("=")
            if not eq or not key:
                parser.error("--param takes KEY=VALUE, got '{}'".format(value))
            rules[-1]["params"][key] = v
        namespace.rules = rules


def _parser():
    p = argparse.ArgumentParser(prog="vigil fleet", description=_DESCRIPTION, epilog=_EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trials", nargs="+", metavar="TRIAL", help="a trial's path, a local glob or an s3:// pattern")
    job = p.add_argument_group("job (as vigil evaluate)")
    job.add_argument("--job", metavar="FILE", help="SageMaker's DebugRuleConfigurations (and ProfilerRuleConfigurations) JSON")
    job.add_argument("--rule", metavar="NAME", action=_OrderedRule, dest="rules", default=None,
                     help="a rule by its rule_to_invoke name (repeatable)")
    job.add_argument("--name", metavar="NAME", action=_OrderedRule, dest="rules",
                     help="the RuleConfigurationName of the preceding --rule")
    job.add_argument("--param", metavar="KEY=VALUE", action=_OrderedRule, dest="rules",
                     help="a RuleParameters entry of the preceding --rule")
    job.add_argument("--profile", metavar="NAME", help="the rules' default profile (sagemaker or calibrated)")
    job.add_argument("--plugins", metavar="DIR", action="append", help="load plugins from DIR too (repeatable)")
    out = p.add_argument_group("output")
    out.add_argument("--output-dir", metavar="DIR", default="vigil-fleet",
                     help="each trial's statuses, log and rule outputs, and index.html (default: vigil-fleet)")
    out.add_argument("--output", metavar="FILE", help="the table as FILE.parquet or FILE.csv")
    out.add_argument("--progress", action="store_true", help="show Dask's progress bar (the default when stderr is a terminal)")
    cl = p.add_argument_group("cluster")
    cl.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler (tcp://HOST:8786); default: a LocalCluster")
    cl.add_argument("--workers", metavar="N", type=int, help="the LocalCluster's worker processes (default: the CPUs)")
    cl.add_argument("--retries", metavar="N", type=int, default=2,
                    help="runs more of a trial whose evaluation failed on a transient S3 error (default 2)")
    cl.add_argument("--timeout", metavar="SECS", type=float, help="stop a trial's evaluation after this long (an Error row)")
    return p


def main(argv=None):
    p = _parser()
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.output and not args.output.endswith((".parquet", ".csv")):
        p.error("--output must end with .parquet or .csv")
    if args.workers is not None and args.workers < 1:
        p.error("--workers must be at least 1")
    if args.retries < 0:
        p.error("--retries must be 0 or more")
    try:
        import dask.distributed  # noqa: F401
        import pandas  # noqa: F401
        if args.output and args.output.endswith(".parquet"):
            import pyarrow  # noqa: F401
    except ImportError as e:
        sys.stderr.write("vigil fleet: {} is not installed: pip install 'vigil[fleet]'\n".format(e.name))
        return 1
    progress = args.progress or sys.stderr.isatty()
    try:
        table = run(args.trials, job=args.job, rules=args.rules, output_dir=args.output_dir, scheduler=args.scheduler,
                    n_workers=args.workers, retries=args.retries, timeout=args.timeout, profile=args.profile,
                    plugins=args.plugins, progress=progress)
    except UsageError as e:
        sys.stderr.write("vigil fleet: {}\n(see vigil fleet --help)\n".format(e))
        return 2
    except OSError as e:
        sys.stderr.write("vigil fleet: {}\n".format(e))
        return 1
    if args.output:
        if args.output.endswith(".parquet"):
            table.to_parquet(args.output, index=False)
        else:
            table.to_csv(args.output, index=False)
    print(counts(table).to_string())
    failed = table[table["rule_configuration_name"].isna()]
    for r in failed.itertuples(index=False):
        print("failed: {}: {}".format(r.trial, r.error))
    print("{} trials; summary: {}".format(table["trial"].nunique(), os.path.join(os.path.abspath(args.output_dir),
                                                                                 "index.html")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
