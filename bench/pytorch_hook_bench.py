"""The capture issue's hook workload, in one run: a 24 x Linear(136, 136) + ReLU MLP (447,716
parameters), batch 64, SGD, 120 TRAIN steps, on the CPU with one thread; the loop without a hook,
with vigil.pytorch.Hook saving weights, biases, gradients and losses at every step (433 MB), and
with save_interval=100. Each variant runs in a process of its own (peak RSS is per process).

usage: PYTHONPATH=build/python /usr/bin/python3 bench/pytorch_hook_bench.py [--runs N] [--steps N]
Prints seconds (median of the runs), the hook's added time, the trial size and peak RSS.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

VARIANT = r"""
import json, resource, sys, time, torch
torch.manual_seed(0); torch.set_num_threads(1)
variant, out_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
layers = []
for _ in range(24):
    layers += [torch.nn.Linear(136, 136), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers)
crit = torch.nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x, y = torch.randn(64, 136), torch.randn(64, 136)
hook = None
if variant != "none":
    import vigil.pytorch as smd
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1 if variant == "every" else 100),
                    include_collections=["weights", "biases", "gradients", "losses"])
    hook.register_module(model); hook.register_loss(crit)
    hook.set_mode(smd.modes.TRAIN)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
for _ in range(steps):
    opt.zero_grad(); crit(model(x), y).backward(); opt.step()
if hook is not None:
    hook.close()
elapsed = time.perf_counter() - t0
print(json.dumps({"seconds": elapsed, "rss_before_kib": rss0,
                  "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def trial_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def run(variant, steps, tmp):
    out = os.path.join(tmp, variant)
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", VARIANT, variant, out, str(steps)], env=env, capture_output=True,
                       text=True, check=True)
    result = json.loads(r.stdout.strip().splitlines()[-1])
    result["trial_bytes"] = trial_bytes(out) if os.path.isdir(out) else 0
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per variant (median), default 3")
    parser.add_argument("--steps", type=int, default=120, help="training steps, default 120")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="vigil-hook-bench-")
    try:
        results = {}
        for variant in ("none", "every", "interval100"):
            runs = [run(variant, args.steps, tmp) for _ in range(args.runs)]
            results[variant] = {"seconds": statistics.median(r["seconds"] for r in runs),
                                "peak_rss_mib": max(r["peak_rss_kib"] for r in runs) / 1024,
                                "trial_mb": runs[-1]["trial_bytes"] / 1e6}
            print("{:<12} {:7.3f} s   peak RSS {:7.1f} MiB   trial {:7.1f} MB".format(
                variant, results[variant]["seconds"], results[variant]["peak_rss_mib"], results[variant]["trial_mb"]),
                flush=True)
        base = results["none"]["seconds"]
        every, sparse = results["every"], results["interval100"]
        print("hook, every step:        +{:.3f} s  (target <= +0.4 s; smdebug 1.0.34 measured +2.2 s)".format(
            every["seconds"] - base))
        print("hook, save_interval=100: +{:.1f} %  (target < 2 %)".format(100 * (sparse["seconds"] - base) / base))
        print("peak RSS added, every step: {:.1f} MiB (target <= 64 MiB + the queue budget)".format(
            every["peak_rss_mib"] - results["none"]["peak_rss_mib"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
