"""vigil fleet's speedup: N trials evaluated one by one (`vigil evaluate` on each in turn, as a shell
loop would) against vigil.fleet on a LocalCluster of W worker processes (one thread each), the same
rules, the same trials. Prints both times, the speedup and its ideal (min(W, CPUs): each evaluation
is one process doing one trial's work), with the load average, which bounds the figure on a shared
machine. The fleet's time includes starting the LocalCluster (a few seconds).

    .venv/bin/python bench/fleet_bench.py [--trials 60] [--steps 200] [--workers 2]

Needs the fleet extra (dask[distributed]) and an installed vigil (scripts/python-envs.sh).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from vigil import fleet, installation
from vigil.modes import ModeKeys
from vigil.writer import TrialWriter

RULES = ["VanishingGradient", "ExplodingTensor", "LossNotDecreasing"]


def write_trial(out, index, steps, tensors, size):
    w = TrialWriter(out, save_interval=1)
    rng = np.random.default_rng(index)
    scale = 1e-9 if index % 3 == 0 else 1.0
    for step in range(steps):
        w.begin_step(ModeKeys.TRAIN)
        w.save_tensor("loss", np.array([1.0 / (1 + step)], dtype=np.float32), collections=["losses"])
        for t in range(tensors):
            w.save_tensor("layer{}.weight_grad".format(t), (rng.standard_normal(size) * scale).astype(np.float32),
                          collections=["gradients"])
        w.end_step()
    w.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=60)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--tensors", type=int, default=8)
    p.add_argument("--size", type=int, default=16384, help="float32 elements per gradient tensor")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    exe = os.environ.get("VIGIL_EXECUTABLE") or installation.executable()
    with tempfile.TemporaryDirectory(prefix="vigil-fleet-bench-") as root:
        trials = [os.path.join(root, "job{:03d}".format(i), "debug-output") for i in range(args.trials)]
        for i, t in enumerate(trials):
            write_trial(t, i, args.steps, args.tensors, args.size)
        rule_args = [a for r in RULES for a in ("--rule", r)]
        sequential = {}
        start = time.perf_counter()
        for i, t in enumerate(trials):
            status_file = os.path.join(root, "seq-{}.json".format(i))
            subprocess.run([exe, "evaluate", "--trial", t, "--no-follow", "--quiet", "--status-file", status_file,
                            "--output-dir", os.path.join(root, "seq-out")] + rule_args, check=True, capture_output=True)
            with open(status_file) as f:
                sequential[t] = sorted((s["RuleConfigurationName"], s["RuleEvaluationStatus"])
                                       for s in json.load(f)["DebugRuleEvaluationStatuses"])
        t_seq = time.perf_counter() - start
        start = time.perf_counter()
        table = fleet.run(trials, rules=RULES, output_dir=os.path.join(root, "fleet"), n_workers=args.workers)
        t_fleet = time.perf_counter() - start
        for t in trials:
            rows = table[table["trial"] == t]
            assert sorted(zip(rows["rule_configuration_name"], rows["status"])) == sequential[t], t
    ideal = min(args.workers, os.cpu_count() or 1)
    print("trials {} (steps {}, {} x {} float32 gradients each), rules {}".format(
        args.trials, args.steps, args.tensors, args.size, ",".join(RULES)))
    print("one by one:            {:7.2f} s  ({:.3f} s a trial)".format(t_seq, t_seq / args.trials))
    print("fleet, {} workers:      {:7.2f} s  (LocalCluster start included)".format(args.workers, t_fleet))
    print("speedup {:.2f}x  (ideal {}x: {} workers on {} CPUs)  load average {}".format(
        t_seq / t_fleet, ideal, args.workers, os.cpu_count(), " ".join("{:.2f}".format(x) for x in os.getloadavg())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
