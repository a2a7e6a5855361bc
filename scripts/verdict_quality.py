#!/usr/bin/python3
"""Scores the built-in rules' verdicts against the labelled runs' ground truth.

Every labelled run of shared/fixtures/pathologies (schema vigil-pathology-label/1) says, per rule,
whether the rule's target pathology is present, absent or arguable. This runs `vigil evaluate` once
per run with every labelled rule and counts, per rule and profile, true and false positives and
negatives against that ground truth (arguable cases apart):

  sagemaker   the label's parameters: SageMaker's defaults, or the docs' example selection where
              the rule has none (the label's `params`), exactly as the label tests run them
  calibrated  no parameters at all, with RuleParameters vigil_profile=calibrated: the calibrated
              profile's own defaults and selections

    scripts/verdict_quality.py [--build DIR] [--runs DIR] [--profile NAME]... [--json FILE]

prints one markdown table per profile and the runs behind every false verdict. Exit status 0.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUNS = ROOT.parent / "shared" / "fixtures" / "pathologies"
PROFILES = ("sagemaker", "calibrated")


def rule_parameter(value):
    """A label value as SageMaker passes it: Python's str() of numbers and booleans, lists joined by commas."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, list):
        return ",".join(p for p in (rule_parameter(v) for v in value) if p is not None)
    return str(value)


def load_labels(runs):
    labels = []
    for path in sorted(Path(runs).glob("*.label.json")):
        with open(path) as f:
            labels.append(json.load(f))
    if not labels:
        raise SystemExit(f"verdict_quality: no *.label.json in {runs}")
    return labels


def evaluate_run(vigil, runs, label, profile, extra_args=()):
    """The statuses of every labelled rule on one run: {rule: {status, first_trigger, judgement}}."""
    rules = list(label["rules"].items())
    out = {}
    for chunk in range(0, len(rules), 10):  # SageMaker allows 20 rules a job
        command = [str(vigil), "evaluate", "--quiet", "--no-follow", "--trial", str(Path(runs) / label["run"])]
        for rule, spec in rules[chunk:chunk + 10]:
            command += ["--rule", rule]
            if profile == "sagemaker":
                for key, value in (spec.get("params") or {}).items():
                    text = rule_parameter(value)
                    if text is not None:
                        command += ["--param", f"{key}={text}"]
            else:
                command += ["--param", f"vigil_profile={profile}"]
        command += list(extra_args)
        with tempfile.TemporaryDirectory(prefix="vigil-verdict-quality-") as tmp:
            status_file = Path(tmp) / "status.json"
            done = subprocess.run(command + ["--status-file", str(status_file)], cwd=tmp, capture_output=True,
                                  text=True)
            if done.returncode != 0 or not status_file.exists():
                raise SystemExit(f"verdict_quality: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
            statuses = json.loads(status_file.read_text())["DebugRuleEvaluationStatuses"]
        for s in statuses:
            triggers = s.get("Triggers") or []
            out[s["RuleConfigurationName"]] = {
                "status": s["RuleEvaluationStatus"],
                "first_trigger": triggers[0]["step"] if triggers else None,
                "judgement": s.get("Judgement"),
            }
    return out


def score(vigil, runs, profile, extra_args=()):
    """Per rule: counts of tp, fn, fp, tn, arguable_fired, arguable_silent; and the false verdicts."""
    table = {}
    wrong = []
    for label in load_labels(runs):
        verdicts = evaluate_run(vigil, runs, label, profile, extra_args)
        for rule, spec in label["rules"].items():
            row = table.setdefault(rule, dict(tp=0, fn=0, fp=0, tn=0, arguable_fired=0, arguable_silent=0))
            verdict = verdicts[rule]
            fired = verdict["status"] == "IssuesFound"
            truth = spec["ground_truth"]
            if truth == "arguable":
                row["arguable_fired" if fired else "arguable_silent"] += 1
                continue
            present = truth == "present"
            key = ("tp" if fired else "fn") if present else ("fp" if fired else "tn")
            row[key] += 1
            if key in ("fp", "fn"):
                wrong.append(dict(run=label["run"], rule=rule, kind=key.upper(), status=verdict["status"],
                                  first_trigger=verdict["first_trigger"]))
    return table, wrong


def total_errors(table):
    return sum(r["fp"] + r["fn"] for r in table.values())


def markdown(profile, table, wrong):
    lines = [f"### Profile `{profile}`: {total_errors(table)} false verdicts", "",
             "| rule | TP | FN | FP | TN | fires, arguable | silent, arguable |",
             "|---|---|---|---|---|---|---|"]
    for rule, r in table.items():
        lines.append(f"| {rule} | {r['tp']} | {r['fn']} | {r['fp']} | {r['tn']} | {r['arguable_fired']} | "
                     f"{r['arguable_silent']} |")
    lines.append("")
    for w in wrong:
        at = f", first at step {w['first_trigger']}" if w["first_trigger"] is not None else ""
        lines.append(f"- {w['kind']}: {w['rule']} on `{w['run']}` ({w['status']}{at})")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.environ.get("VIGIL_BUILD_DIR", str(ROOT / "build")),
                        help="the build folder holding bin/vigil (default: $VIGIL_BUILD_DIR or build/)")
    parser.add_argument("--runs", default=str(DEFAULT_RUNS), help="the labelled runs (default: %(default)s)")
    parser.add_argument("--profile", action="append", choices=PROFILES,
                        help="the profile(s) to score (default: both)")
    parser.add_argument("--json", help="also write the counts and false verdicts here")
    args = parser.parse_args(argv)
    vigil = Path(args.build) / "bin" / "vigil"
    if not vigil.exists():
        raise SystemExit(f"verdict_quality: {vigil} does not exist; build first (scripts/build.sh {args.build})")
    results = {}
    for profile in args.profile or PROFILES:
        print(f"scoring profile {profile} on {args.runs} ...", file=sys.stderr, flush=True)
        table, wrong = score(vigil, args.runs, profile)
        results[profile] = dict(total_false=total_errors(table), rules=table, false_verdicts=wrong)
        print(markdown(profile, table, wrong))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
