"""vigil.pytorch.Hook on a torch.compile'd model (inductor, the CPU, one thread), on the capture issue's
workload (bench/pytorch_hook_bench.py: a 24 x Linear(136, 136) + ReLU MLP, batch 64, SGD, 120 TRAIN
steps; weights, biases, gradients and losses): the compiled loop without a hook, with the hook saving
at every step, and with save_interval=100; the eager loop for reference. Each variant runs in a
process of its own with a fresh inductor cache, so each pays its compilations.

usage: PYTHONPATH=<vigil's package> python bench/pytorch_compile_bench.py [--runs N] [--steps N]
Prints, per variant (median of the runs): the first two steps (where the compiled variants compile:
a saving step and one that saves nothing, one graph each), the steps after them, dynamo's frame
compilations over the run and the frames compiled after step 1 (0 is expected), and the trial size.
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
import json, sys, time, torch
torch.manual_seed(0); torch.set_num_threads(1)
variant, out_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
layers = []
for _ in range(24):
    layers += [torch.nn.Linear(136, 136), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers)
crit = torch.nn.MSELoss()
x, y = torch.randn(64, 136), torch.randn(64, 136)
hook = None
if variant in ("every", "interval100"):
    import vigil.pytorch as smd
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1 if variant == "every" else 100),
                    include_collections=["weights", "biases", "gradients", "losses"])
    hook.register_module(model); hook.register_loss(crit)
    hook.set_mode(smd.modes.TRAIN)
run = model if variant == "eager" else torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
from torch._dynamo.utils import counters
times, frames = [], []
for _ in range(steps):
    t0 = time.perf_counter()
    opt.zero_grad(); crit(run(x), y).backward(); opt.step()
    times.append(time.perf_counter() - t0)
    frames.append(counters["frames"]["total"])
t0 = time.perf_counter()
if hook is not None:
    hook.close()
close = time.perf_counter() - t0
print(json.dumps({"first_two": sum(times[:2]), "rest": sum(times[2:]) + close, "frames": frames[-1],
                  "frames_after_step1": frames[-1] - frames[1]}))
"""


def trial_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def run(variant, steps, tmp):
    out = os.path.join(tmp, variant)
    cache = os.path.join(tmp, "inductor-cache")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)  # every run compiles from nothing
    env = dict(os.environ, OMP_NUM_THREADS="1", TORCHINDUCTOR_COMPILE_THREADS="1", TORCHINDUCTOR_CACHE_DIR=cache)
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
    tmp = tempfile.mkdtemp(prefix="vigil-compile-bench-")
    try:
        results = {}
        labels = {"eager": "eager, no hook", "none": "compiled, no hook", "every": "compiled, hook every step",
                  "interval100": "compiled, hook save_interval=100"}
        print("{:<34} {:>14} {:>14} {:>8} {:>14} {:>10}".format(
            "variant", "steps 0-1 (s)", "steps 2- (s)", "frames", "frames after 1", "trial MB"))
        for variant in ("eager", "none", "every", "interval100"):
            runs = [run(variant, args.steps, tmp) for _ in range(args.runs)]
            r = results[variant] = {key: statistics.median(x[key] for x in runs)
                                    for key in ("first_two", "rest", "frames", "frames_after_step1")}
            r["trial_mb"] = runs[-1]["trial_bytes"] / 1e6
            print("{:<34} {:14.3f} {:14.3f} {:8.0f} {:14.0f} {:10.1f}".format(
                labels[variant], r["first_two"], r["rest"], r["frames"], r["frames_after_step1"], r["trial_mb"]),
                flush=True)
        base = results["none"]["rest"]
        for variant in ("every", "interval100"):
            print("{}: {:+.3f} s ({:+.1f} %) over the compiled loop after step 1".format(
                labels[variant], results[variant]["rest"] - base, 100 * (results[variant]["rest"] - base) / base))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
