"""GPU capture (docs/capture.md, "GPU capture"): the training loop on a CUDA device without a hook,
with vigil.pytorch.Hook saving weights, biases, gradients and losses at every step, and at
save_interval=100. On a GPU the hook stages each value through a device snapshot and a side
stream's copy into pinned host buffers (vigil/capture/device_staging.py); the bench says how many
steps the staging pool dropped (it drops a step rather than make training wait). Without a CUDA
device it says so ("no CUDA device: CPU fallback") and runs the same loop on the CPU, where the
hook copies values into the writer's queue directly: those figures are not GPU figures.

The workload: a MLP of --layers x Linear(--width, --width) + ReLU, batch --batch, SGD, in fp32 or
bf16 (--dtype); each run a process of its own, the variants' runs interleaved. Timed: the steps
after the first two, then torch.cuda.synchronize() and hook.close().

usage: PYTHONPATH=<vigil's package> python bench/pytorch_gpu_capture_bench.py [--runs N] [--steps N]
           [--width W] [--layers L] [--batch B] [--dtype fp32|bf16]
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
torch.manual_seed(0)
variant, out_dir, steps, width, depth, batch, dtype, device = sys.argv[1:9]
steps, width, depth, batch = int(steps), int(width), int(depth), int(batch)
dtype = torch.bfloat16 if dtype == "bf16" else torch.float32
if device == "cpu":
    torch.set_num_threads(1)
layers = []
for _ in range(depth):
    layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers).to(device=device, dtype=dtype)
crit = torch.nn.MSELoss()
x = torch.randn(batch, width, device=device, dtype=dtype)
y = torch.randn(batch, width, device=device, dtype=dtype)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
hook = None
if variant != "none":
    import vigil.pytorch as smd
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1 if variant == "every" else 100),
                    include_collections=["weights", "biases", "gradients", "losses"])
    hook.register_module(model); hook.register_loss(crit)
    hook.set_mode(smd.modes.TRAIN)
def sync():
    if device == "cuda":
        torch.cuda.synchronize()
def step():
    opt.zero_grad(); crit(model(x), y).backward(); opt.step()
for _ in range(2):
    step()
sync()
t0 = time.perf_counter()
for _ in range(steps - 2):
    step()
sync()
loop = time.perf_counter() - t0
staged = hook is not None and getattr(hook, "_staging", None) is not None
if hook is not None:
    hook.close()
print(json.dumps({"seconds": time.perf_counter() - t0, "loop_seconds": loop, "staged": staged}))
"""

VARIANTS = ("none", "every", "interval100")


def trial_stats(path):
    if not os.path.isdir(path):
        return 0, 0
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
    dropped = 0
    try:
        import vigil
        trial = vigil.create_trial(path)
        if trial.has_tensor("vigil/dropped_step"):
            dropped = len(trial.tensor("vigil/dropped_step").steps())
    except Exception as e:  # noqa: BLE001 - the bench still prints its times
        print("  (could not read {}: {})".format(path, e))
    return size, dropped


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--width", type=int, default=None, help="default 1024 on a GPU, 136 on the CPU fallback")
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--batch", type=int, default=None, help="default 1024 on a GPU, 64 on the CPU fallback")
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    args = parser.parse_args()
    import torch
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    width = args.width or (1024 if cuda else 136)
    batch = args.batch or (1024 if cuda else 64)
    if cuda:
        print("CUDA device: {} (torch {})".format(torch.cuda.get_device_name(0), torch.__version__))
    else:
        print("no CUDA device: CPU fallback (torch {}; the hook's direct path, not the GPU staging: these are "
              "not GPU figures)".format(torch.__version__))
    print("{} x Linear({w}, {w}) + ReLU, batch {}, {}, {} steps ({} timed), {} runs; load {:.2f}".format(
        args.layers, batch, args.dtype, args.steps, args.steps - 2, args.runs, os.getloadavg()[0], w=width))
    tmp = tempfile.mkdtemp(prefix="vigil-gpu-capture-bench-")
    samples = {v: [] for v in VARIANTS}
    try:
        for _ in range(args.runs):
            for variant in VARIANTS:
                out = os.path.join(tmp, variant)
                shutil.rmtree(out, ignore_errors=True)
                r = subprocess.run([sys.executable, "-c", VARIANT, variant, out, str(args.steps), str(width),
                                    str(args.layers), str(batch), args.dtype, device],
                                   capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
                if r.returncode != 0:
                    raise SystemExit("{} failed:\n{}".format(variant, r.stderr[-4000:]))
                result = json.loads(r.stdout.strip().splitlines()[-1])
                result["trial_bytes"], result["dropped"] = trial_stats(out)
                samples[variant].append(result)
        base = statistics.median(r["seconds"] for r in samples["none"])
        for variant in VARIANTS:
            rs = samples[variant]
            secs = statistics.median(r["seconds"] for r in rs)
            line = "  {:<12} {:8.3f} s (loop {:.3f} s)".format(
                variant, secs, statistics.median(r["loop_seconds"] for r in rs))
            if variant != "none":
                line += "  {:+6.1f} %  trial {:8.1f} MB  dropped steps {}  staged: {}".format(
                    100 * (secs - base) / base, rs[-1]["trial_bytes"] / 1e6, rs[-1]["dropped"],
                    "yes" if rs[-1]["staged"] else "no")
            print(line, flush=True)
        print("  (load {:.2f})".format(os.getloadavg()[0]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
