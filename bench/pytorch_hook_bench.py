"""The capture issue's hook workload on eager fp32, eager bf16 and torch.compile'd models: a 24 x
Linear(136, 136) + ReLU MLP (447,716 parameters), batch 64, SGD, TRAIN steps on the CPU with one
thread; the loop without a hook, with vigil.pytorch.Hook saving weights, biases, gradients and
losses at every step, and with save_interval=100, beside the targets (issue 29: <= +10 % at every
step, <= +1 % at save_interval=100). Each run is a process of its own (peak RSS is per process; the
compiled model compiles from nothing, in a fresh inductor cache); the runs of a model's variants
are interleaved, in an order that turns from run to run, after os.sync() (no run pays for the
writeback of the last one's trial), so that the machine's load drifts over all of them alike.

  eager    the fp32 model as it is
  bf16     the same model and batch in bfloat16 (weights, gradients and activations: the hook
           saves bfloat16 values, as their raw bits)
  compile  torch.compile(model) (inductor), the hook registered on the original module

The physical limit of the every-step row, printed beside it: a fourth variant, `floor`, copies
each weight, bias and gradient once per step into buffers of its own (one torch._foreach_copy_
for all of them: the least the training thread must do to capture every value), and the every-step
trial's bytes are written again, in files of the same sizes, into the page cache of the same file
system (the writer's least time, on the other core: the loop with close() cannot end before it).

Timed: the steps after the first two (where the compiled model compiles, a saving step's graph and
a non-saving step's) and hook.close() (the writer drains its queue).

usage: PYTHONPATH=<vigil's package> python bench/pytorch_hook_bench.py [--runs N] [--steps N]
           [--models eager,bf16,compile] [--calls]
Prints per model and variant the medians of the wall time (and its spread), of the training thread's
CPU time (what the hook takes from the loop's thread: less moved by other processes than the wall
time) and of the process's CPU time (the writer's thread too), each added time in %, the trial size
and peak RSS, with the load average at the start and end of each model, and each run's added % against the
no-hook run beside it (the spread a median's added % must clear to be the hook's). --calls also
counts the Python function calls the hook adds per step (cProfile, one run of each hooked eager
variant): a figure that does not move with the machine's load.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

VARIANT = r"""
import cProfile, json, pstats, resource, sys, time, torch
torch.manual_seed(0); torch.set_num_threads(1)
model_kind, variant, out_dir, steps, count_calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
hook_module = sys.argv[6]  # vigil.pytorch, or smdebug.pytorch for the real smdebug's figure
layers = []
for _ in range(24):
    layers += [torch.nn.Linear(136, 136), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers)
crit = torch.nn.MSELoss()
x, y = torch.randn(64, 136), torch.randn(64, 136)
if model_kind == "bf16":
    model, x, y = model.to(torch.bfloat16), x.to(torch.bfloat16), y.to(torch.bfloat16)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
hook = None
copies = None
if variant == "floor":
    # The least the training thread must do to capture every value at every step: copy each weight,
    # bias and gradient once (one torch call for all, into buffers made once), nothing else
    sources = list(model.parameters())
    copies = ([torch.empty_like(p) for p in sources], [torch.empty_like(p) for p in sources])
elif variant != "none":
    import importlib
    smd = importlib.import_module(hook_module)
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1 if variant == "every" else 100),
                    include_collections=["weights", "biases", "gradients", "losses"])
    hook.register_module(model); hook.register_loss(crit)
    hook.set_mode(smd.modes.TRAIN)
run = torch.compile(model) if model_kind == "compile" else model
def step():
    if copies is not None:
        torch._foreach_copy_(copies[0], sources)
    opt.zero_grad(); crit(run(x), y).backward()
    if copies is not None:
        torch._foreach_copy_(copies[1], [p.grad for p in sources])
    opt.step()
for _ in range(2):
    step()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
profile = cProfile.Profile() if count_calls else None
if profile is not None:
    profile.enable()
t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
for _ in range(steps - 2):
    step()
if hook is not None:
    hook.close()
elapsed, thread_cpu, process_cpu = time.perf_counter() - t0, time.thread_time() - c0, time.process_time() - p0
calls = 0
if profile is not None:
    profile.disable()
    calls = pstats.Stats(profile).total_calls
print(json.dumps({"seconds": elapsed, "thread_cpu": thread_cpu, "process_cpu": process_cpu,
                  "rss_before_kib": rss0, "calls": calls,
                  "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

VARIANTS = ("none", "every", "interval100", "floor")
TARGETS = {"every": 10.0, "interval100": 1.0}  # % over the loop alone (issue 29)


def trial_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def run(model_kind, variant, steps, tmp, count_calls=False, python=sys.executable, hook_module="vigil.pytorch"):
    out = os.path.join(tmp, model_kind + "-" + variant)
    cache = os.path.join(tmp, "inductor-cache")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", TORCHINDUCTOR_COMPILE_THREADS="1", TORCHINDUCTOR_CACHE_DIR=cache)
    r = subprocess.run([python, "-c", VARIANT, model_kind, variant, out, str(steps), "1" if count_calls else "0",
                        hook_module], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("{} {} failed:\n{}".format(model_kind, variant, r.stderr[-4000:]))
    result = json.loads(r.stdout.strip().splitlines()[-1])
    result["trial_bytes"] = trial_bytes(out) if os.path.isdir(out) else 0
    if variant not in ("none", "floor") and result["trial_bytes"] == 0:  # the hook stepped aside: its time means nothing
        raise SystemExit("{} {} with {} wrote no trial:\n{}".format(model_kind, variant, hook_module, r.stderr[-4000:]))
    return result


def load():
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def write_floor(trial, runs=3):
    """Seconds to write `trial`'s files again, as many bytes in files of the same sizes, into the page
    cache of the same file system (no sync, as the writer does; median of `runs`, each after os.sync()):
    the writer's least time for the every-step trial, on the core beside the training thread."""
    sizes = [os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(trial) for f in fs]
    data = os.urandom(max(sizes, default=0))
    times = []
    for _ in range(runs):
        copy = trial + "-floor"
        shutil.rmtree(copy, ignore_errors=True)
        os.makedirs(copy)
        os.sync()
        t = time.perf_counter()
        for k, size in enumerate(sizes):
            fd = os.open(os.path.join(copy, str(k)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, memoryview(data)[:size])
            os.close(fd)
        times.append(time.perf_counter() - t)
        shutil.rmtree(copy, ignore_errors=True)
    return statistics.median(times), sum(sizes)


def bench_model(model_kind, runs, steps, tmp, python=sys.executable, hook_module="vigil.pytorch", label=None):
    """The model's variants; the added wall time in % of each hooked variant, and the floors."""
    variants = VARIANTS if hook_module == "vigil.pytorch" else VARIANTS[:3]  # the floor needs torch 2
    samples = {v: [] for v in variants}
    print("{} ({} steps timed, {} runs; {})".format(label or model_kind, steps - 2, runs, load()), flush=True)
    for i in range(runs):
        # The order turns from run to run, and the dirty pages a run leaves (432 MB at every step) are
        # written back before the next starts: the kernel's writeback otherwise lands in whichever
        # variant follows the every-step one (it was always save_interval=100's run).
        for variant in variants[i % len(variants):] + variants[:i % len(variants)]:
            os.sync()
            samples[variant].append(run(model_kind, variant, steps, tmp, python=python, hook_module=hook_module))
    base = {key: statistics.median(r[key] for r in samples["none"]) for key in ("seconds", "thread_cpu", "process_cpu")}
    added_wall = {}
    for variant in variants:
        rs = samples[variant]
        med = {key: statistics.median(r[key] for r in rs) for key in base}
        line = "  {:<12} wall {:6.3f} s (runs {:.3f}-{:.3f})  training thread CPU {:6.3f} s  process CPU {:6.3f} s".format(
            variant, med["seconds"], min(r["seconds"] for r in rs), max(r["seconds"] for r in rs), med["thread_cpu"],
            med["process_cpu"])
        line += "  peak RSS {:6.1f} MiB  trial {:6.1f} MB".format(max(r["peak_rss_kib"] for r in rs) / 1024,
                                                                rs[-1]["trial_bytes"] / 1e6)
        print(line, flush=True)
        if variant in TARGETS:
            added = {key: 100 * (med[key] - base[key]) / base[key] for key in base}
            added_wall[variant] = added["seconds"]
            print("  {:<12} added: wall {:+.1f} %, training thread CPU {:+.1f} %, process CPU {:+.1f} % "
                  "(target <= {:g} %: wall {})".format(
                      "", added["seconds"], added["thread_cpu"], added["process_cpu"], TARGETS[variant],
                      "met" if added["seconds"] <= TARGETS[variant] else "NOT met"), flush=True)
            # Each run against the no-hook run beside it (the runs are interleaved): the spread of these
            # is the noise a median's added % sits in; an added % inside it is not the hook's.
            paired = {key: [100 * (r[key] - b[key]) / b[key] for r, b in zip(rs, samples["none"])]
                      for key in ("seconds", "thread_cpu")}
            print("  {:<12} run by run: wall {} %, training thread CPU {} %".format(
                "", " ".join("{:+.1f}".format(a) for a in paired["seconds"]),
                " ".join("{:+.1f}".format(a) for a in paired["thread_cpu"])), flush=True)
    if "floor" in samples:
        # The physical limit of the every-step row: the training thread copies each value once (the
        # floor variant's added time), and the writer puts the trial into the page cache on the other
        # core, which the loop cannot outrun (close() waits for it).
        copy_added = 100 * (statistics.median(r["seconds"] for r in samples["floor"]) - base["seconds"]) / base["seconds"]
        written, size = write_floor(os.path.join(tmp, model_kind + "-every"))
        least = max(copy_added, 100 * (written - base["seconds"]) / base["seconds"])
        print("  {:<12} physical limit at every step: one copy of each value on the training thread {:+.1f} %; "
              "the trial's {:.1f} MB written into the page cache in {:.3f} s ({:.0f} MB/s) beside the loop's "
              "{:.3f} s: least added {:+.1f} %".format("", copy_added, size / 1e6, written, size / 1e6 / written,
                                                     base["seconds"], least), flush=True)
        added_wall["least"] = least
    print("  ({})".format(load()), flush=True)
    return added_wall


def torch_version(python):
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True,
                          check=True).stdout.strip()


def count_hook_calls(steps, tmp):
    base = run("eager", "none", steps, tmp, count_calls=True)["calls"]
    for variant in ("every", "interval100"):
        calls = run("eager", variant, steps, tmp, count_calls=True)["calls"]
        print("  eager {:<12} Python calls added by the hook: {:,} ({:.0f} per timed step, close included)".format(
            variant, calls - base, (calls - base) / (steps - 2)), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per variant (median), default 5")
    parser.add_argument("--steps", type=int, default=120, help="training steps, default 120 (the first two untimed)")
    parser.add_argument("--models", default="eager,bf16,compile", help="comma-separated: eager, bf16, compile")
    parser.add_argument("--calls", action="store_true", help="also count the Python calls the hook adds (cProfile)")
    parser.add_argument("--smdebug-python", help="a Python with smdebug 1.0.34 and its torch (1.13): the eager model "
                        "also runs with smdebug's hook there, for smdebug's figure")
    parser.add_argument("--rows", help="append the summary rows here (bench/rows.py)")
    args = parser.parse_args()
    import torch  # noqa: F401 - the version is part of the figures
    print("torch {}, Python {}".format(torch.__version__, sys.version.split()[0]))
    tmp = tempfile.mkdtemp(prefix="vigil-hook-bench-")
    try:
        added = {}
        for model_kind in args.models.split(","):
            added[model_kind] = bench_model(model_kind, args.runs, args.steps, tmp)
        theirs = {}
        if args.smdebug_python:
            version = torch_version(args.smdebug_python)
            theirs = bench_model("eager", args.runs, args.steps, tmp, python=args.smdebug_python,
                                 hook_module="smdebug.pytorch", label="eager, smdebug 1.0.34's hook on torch " + version)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import rows
        for model_kind, by_variant in added.items():
            for variant, what in (("every", "every step"), ("interval100", "save_interval=100")):
                smdebug = theirs.get(variant) if model_kind == "eager" else None
                notes = ["smdebug's figure is on torch 1.13, the last it supports"] if smdebug is not None else []
                if variant == "every" and "least" in by_variant:
                    notes.append("physical limit {:+.1f} % (one copy of each value, the trial into the page "
                                 "cache)".format(by_variant["least"]))
                rows.add(args.rows, "hook on torch {}, {}, {} (+% wall)".format(torch.__version__, model_kind, what),
                         round(by_variant[variant], 1), "%", smdebug=None if smdebug is None else round(smdebug, 1),
                         target="<= {:g} %".format(TARGETS[variant]), met=by_variant[variant] <= TARGETS[variant],
                         note="; ".join(notes))
        if args.calls:
            count_hook_calls(args.steps, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
