"""The profiler's overhead, on demand (never in CI):
(a) the C++ system monitor at 500 ms: CPU time its thread uses per wall second, read from
    /proc/self/task/<tid>/stat of the monitor thread while nothing else runs in the process;
(b) the framework events' added time per step on the capture benchmark's workload (the model of
    bench/pytorch_hook_bench.py: 24 x Linear(136, 136) + ReLU, batch 64, SGD, one thread), in process
    CPU time (the training thread's and the profiler's; other processes' load does not count): the hook
    with no profiler config against the hook with framework profiling on (steps, forward and backward
    spans, data-loader fetches), each in processes of their own, median of the runs.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/profiler_overhead_bench.py [--seconds S] [--runs N] [--steps N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MONITOR = r"""
import json, os, sys, threading, time
from vigil import _vigil
root, seconds = sys.argv[1], float(sys.argv[2])
cfg = _vigil.parse_profiler_config(json.dumps({"ProfilingParameters": {"ProfilingIntervalInMilliseconds": 500,
                                                                        "LocalPath": root}}))
before = set(os.listdir("/proc/self/task"))
m = _vigil.SystemMonitor(cfg)
assert m.start()
time.sleep(0.2)
[tid] = set(os.listdir("/proc/self/task")) - before
tick = os.sysconf("SC_CLK_TCK")
def cpu():
    with open("/proc/self/task/%s/stat" % tid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick  # utime + stime
c0, t0 = cpu(), time.monotonic()
time.sleep(seconds)
c1, t1 = cpu(), time.monotonic()
m.stop()
print(json.dumps({"cpu_s": c1 - c0, "wall_s": t1 - t0, "samples": m.samples_written}))
"""

WORKLOAD = r"""
import json, os, sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0); torch.set_num_threads(1)
variant, tmp, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if variant == "profiled":
    cfg = os.path.join(tmp, "profilerconfig.json")
    with open(cfg, "w") as f:
        json.dump({"ProfilingParameters": {"LocalPath": os.path.join(tmp, "profiler"),
                   "DataloaderProfilingConfig": "{'StartStep': 0, 'NumSteps': 1000000}"}}, f)
    os.environ["SMPROFILER_CONFIG_PATH"] = cfg
else:
    os.environ["SMPROFILER_CONFIG_PATH"] = os.path.join(tmp, "absent.json")
import vigil.pytorch as smd
layers = []
for _ in range(24):
    layers += [torch.nn.Linear(136, 136), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers)
crit = torch.nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
data = DataLoader(TensorDataset(torch.randn(64 * steps, 136), torch.randn(64 * steps, 136)), batch_size=64)
hook = smd.Hook(out_dir=os.path.join(tmp, "trial"), save_config=smd.SaveConfig(save_interval=100000))
hook.register_module(model); hook.register_loss(crit); hook.set_mode(smd.modes.TRAIN)
for x, y in data:  # warm-up epoch
    opt.zero_grad(); crit(model(x), y).backward(); opt.step()
t0 = time.process_time()  # CPU time: the shared machine's load does not count
for x, y in data:
    opt.zero_grad(); crit(model(x), y).backward(); opt.step()
elapsed = time.process_time() - t0
hook.close()
print(json.dumps({"seconds": elapsed}))
"""


SYNTHETIC = r"""
import json, logging, os, sys, time
tmp, steps = sys.argv[1], int(sys.argv[2])
cfg = os.path.join(tmp, "profilerconfig.json")
with open(cfg, "w") as f:
    json.dump({"ProfilingParameters": {"LocalPath": os.path.join(tmp, "profiler")}}, f)
from vigil import _profiling
p = _profiling.FrameworkProfiler(logging.getLogger("bench"), runs_system_monitor=False, config_path=cfg)
names = [str(i) for i in range(48)] + ["Sequential"]
t0 = time.process_time()
for s in range(steps):  # the calls the workload's hooks make per step: 49 forward ends, 24 gradients
    p.step_start(1, s, s, "Sequential")
    for n in names:
        p.forward_end(n)
    for n in names[:48:2]:
        p.backward_seen(n)
p.close()
print(json.dumps({"us_per_step": 1e6 * (time.process_time() - t0) / steps}))
"""


def run(code, *args):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        m = run(MONITOR, os.path.join(tmp, "mon"), a.seconds)
        print("system monitor at 500 ms: {:.3f} s CPU over {:.1f} s wall = {:.3f} % of one core ({} samples)".format(
            m["cpu_s"], m["wall_s"], 100 * m["cpu_s"] / m["wall_s"], m["samples"]))
        synthetic = statistics.median(run(SYNTHETIC, tmp, 2000)["us_per_step"] for _ in range(3))
        print("profiler calls of one workload step (CPU time): {:.1f} us/step".format(synthetic))
        times = {"plain": [], "profiled": []}
        for i in range(a.runs):
            for variant in times:  # interleaved, so drift in the machine's load hits both
                d = os.path.join(tmp, "{}-{}".format(variant, i))
                os.makedirs(d)
                times[variant].append(run(WORKLOAD, variant, d, a.steps)["seconds"])
        plain, prof = statistics.median(times["plain"]), statistics.median(times["profiled"])
        print("framework events (CPU time): {:.2f} ms/step without, {:.2f} ms/step with: +{:.3f} ms/step = {:+.2f} %".format(
            1e3 * plain / a.steps, 1e3 * prof / a.steps, 1e3 * (prof - plain) / a.steps, 100 * (prof - plain) / plain))
        print(json.dumps({"monitor_cpu_percent": 100 * m["cpu_s"] / m["wall_s"], "plain_s": times["plain"],
                          "profiled_s": times["profiled"]}))


if __name__ == "__main__":
    main()
