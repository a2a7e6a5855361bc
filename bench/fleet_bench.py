"""vigil fleet's speedup: N trials evaluated one by one (`vigil evaluate` on each in turn, as a shell
loop would) against vigil.fleet on a LocalCluster of W worker processes (one thread each), the same
rules, the same trials. Prints both times, the speedup and its ideal (min(W, CPUs): each evaluation
is one process doing one trial's work), with the load average, which bounds the figure on a shared
machine. The LocalCluster's start (a few seconds, once per fleet) is timed apart.

    .venv/bin/python bench/fleet_bench.py [--trials 60] [--steps 400] [--workers 2]

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
    p.add_argument("--distinct", type=int, default=6, help="trials written (the others link to them)")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--tensors", type=int, default=4)
    p.add_argument("--size", type=int, default=16384, help="float32 elements per gradient tensor")
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    exe = os.environ.get("VIGIL_EXECUTABLE") or installation.executable()
    with tempfile.TemporaryDirectory(prefix="vigil-fleet-bench-") as root:
        # --distinct trials are written; the others are links to them (each is still evaluated in full:
        # writing 100 MB trials by the hundred would make the benchmark a disk-filling exercise)
        data = [os.path.join(root, "data", str(k)) for k in range(min(args.distinct, args.trials))]
        for k, d in enumerate(data):
            write_trial(d, k, args.steps, args.tensors, args.size)
        trials = []
        for i in range(args.trials):
            os.makedirs(os.path.join(root, "job{:03d}".format(i)))
            trials.append(os.path.join(root, "job{:03d}".format(i), "debug-output"))
            os.symlink(data[i % len(data)], trials[-1])
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
        import logging
        from dask.distributed import Client, LocalCluster
        start = time.perf_counter()
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
            client.wait_for_workers(args.workers)
            t_start = time.perf_counter() - start
            start = time.perf_counter()
            table = fleet.run(trials, rules=RULES, output_dir=os.path.join(root, "fleet"), scheduler=client)
            t_fleet = time.perf_counter() - start
        for t in trials:
            rows = table[table["trial"] == t]
            assert sorted(zip(rows["rule_configuration_name"], rows["status"])) == sequential[t], t
    ideal = min(args.workers, os.cpu_count() or 1)
    print("trials {} ({} distinct; steps {}, {} x {} float32 gradients each), rules {}".format(
        args.trials, len(data), args.steps, args.tensors, args.size, ",".join(RULES)))
    print("one by one:            {:7.2f} s  ({:.3f} s a trial)".format(t_seq, t_seq / args.trials))
    print("LocalCluster start:    {:7.2f} s  (once per fleet)".format(t_start))
    print("fleet, {} workers:      {:7.2f} s  (+ the start: {:.2f} s)".format(args.workers, t_fleet, t_fleet + t_start))
    print("speedup {:.2f}x, {:.2f}x with the start  (ideal {}x: {} workers on {} CPUs)  load average {}".format(
        t_seq / t_fleet, t_seq / (t_fleet + t_start), ideal, args.workers, os.cpu_count(),
        " ".join("{:.2f}".format(x) for x in os.getloadavg())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
