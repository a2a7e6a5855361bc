"""The real smdebug's side of Vigil's benchmark: the same workloads, on the same trials, through
smdebug 1.0.34's own reader, so that scripts/bench.sh prints smdebug's figure beside Vigil's.

Run with a Python that has smdebug (the project's .venv-smdebug; scripts/python-envs.sh makes it).
Each command prints one JSON line; the caller times the whole process, as it does Vigil's.

  open-list TRIAL      create_trial, steps() and tensor_names(): what `vigil inspect` does
  vanishing TRIAL      VanishingGradient (builtin-rules.md 2.1: mean |g| of every gradient at every
                       step, below 1e-7) as a custom smdebug rule, run to the trial's end by
                       smdebug's invoke_rule, as the SageMaker rule container ran it
  scan TRIAL           every value of every tensor at every step (values and bytes read)
  live TRIAL --publish FILE --steps N -- WRITER...
                       starts the writer command (bench/live_writer.py) once smdebug is imported,
                       follows TRIAL as the writer writes it, and records when the rule is invoked
                       for each step; the writer leaves its publication times in FILE
                       ({"published": [t0, t1, ...]}), read once it has ended

TRIAL may be an s3:// location (boto3 finds the endpoint in AWS_ENDPOINT_URL).
"""
import argparse
import json
import os
import subprocess
import sys
import time

from smdebug.exceptions import NoMoreData, RuleEvaluationConditionMet, StepUnavailable, TensorUnavailableForStep
from smdebug.rules.rule import Rule
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial


class VanishingGradient(Rule):
    """builtin-rules.md 2.1, through smdebug's reduction API (a saved reduction or one computed from
    the value), as the rule container's implementation asked for it."""

    def __init__(self, base_trial, threshold=1e-7):
        super().__init__(base_trial, action_str="")
        self.threshold = float(threshold)

    def invoke_at_step(self, step):
        fired = False
        for name in self.base_trial.tensor_names(collection="gradients"):
            try:
                m = self.base_trial.tensor(name).reduction_value(step, "mean", abs=True)
            except TensorUnavailableForStep:
                continue
            if m is not None and m < self.threshold:
                fired = True
        return fired


class RecordInvocations(Rule):
    """Reads the loss at each step and records when it did (the live workload)."""

    def __init__(self, base_trial):
        super().__init__(base_trial, action_str="")
        self.invoked = {}

    def invoke_at_step(self, step):
        for name in self.base_trial.tensor_names():
            self.base_trial.tensor(name).value(step)
        self.invoked[step] = time.time()
        return False


def run_to_end(rule):
    try:
        invoke_rule(rule, raise_eval_cond=False)
    except NoMoreData:
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["open-list", "vanishing", "scan", "live"])
    ap.add_argument("trial")
    ap.add_argument("--publish", help="live: the writer's publication times (JSON), read at the end")
    ap.add_argument("--steps", type=int, default=0, help="live: steps the writer writes")
    argv = sys.argv[1:]
    writer_cmd = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)

    t0 = time.perf_counter()
    if args.command == "open-list":
        trial = create_trial(args.trial)
        steps = trial.steps()
        names = trial.tensor_names()
        result = {"steps": len(steps), "tensors": len(names)}
    elif args.command == "vanishing":
        trial = create_trial(args.trial)
        rule = VanishingGradient(trial)
        run_to_end(rule)
        result = {"steps": len(trial.steps())}
    elif args.command == "scan":
        trial = create_trial(args.trial)
        values = nbytes = 0
        for name in trial.tensor_names():
            tensor = trial.tensor(name)
            for step in tensor.steps():
                for worker in tensor.workers(step):
                    v = tensor.value(step, worker=worker)
                    values += 1
                    nbytes += v.nbytes
        result = {"values": values, "bytes": nbytes}
    else:  # live
        if not writer_cmd or not args.publish or args.steps < 2:
            ap.error("live needs --publish, --steps >= 2 and -- WRITER...")
        writer = subprocess.Popen(writer_cmd)
        while not os.path.isdir(os.path.join(args.trial, "index")):
            time.sleep(0.01)  # create_trial of a folder not there yet would find no trial
        trial = create_trial(args.trial)
        rule = RecordInvocations(trial)
        step = 0
        while step < args.steps:
            try:
                rule.invoke(step)
            except (StepUnavailable, TensorUnavailableForStep, RuleEvaluationConditionMet):
                pass
            except NoMoreData:
                break
            step += 1
        if writer.wait() != 0:
            raise SystemExit("the writer failed: " + " ".join(writer_cmd))
        with open(args.publish) as f:
            published = json.load(f)["published"]
        latencies = sorted((rule.invoked[s] - published[s]) * 1e3 for s in rule.invoked if s < len(published))
        result = {"steps": len(latencies),
                  "latency_ms_first": (rule.invoked[0] - published[0]) * 1e3 if 0 in rule.invoked else None,
                  "latency_ms_median": latencies[len(latencies) // 2] if latencies else None,
                  "latency_ms_max": latencies[-1] if latencies else None}
    result["seconds"] = time.perf_counter() - t0
    print(json.dumps(result))


if __name__ == "__main__":
    main()
