"""vigil.pytorch.Hook under FSDP2 (fully_shard) and FSDP1 (FullyShardedDataParallel) on 2 gloo processes (the CPU, one thread each), on the
capture issue's workload (bench/pytorch_hook_bench.py: a 24 x Linear(136, 136) + ReLU MLP, SGD; batch
64 per rank; weights, biases, gradients and losses, include_workers="all"; each Linear a unit of its
own): the sharded loop without a hook, with the hook saving every step (each rank its shards, at the
optimizer step), and with save_interval=100. smdebug 1.0.34 has no column: it runs on no torch 2,
FSDP2 is torch 2 only, and its hook has no FSDP1 support.

usage: PYTHONPATH=<vigil's package> python bench/pytorch_fsdp_bench.py [--runs N] [--steps N]
Prints, per variant (median of the runs): rank 0's time for the steps after the first two (the
first ones build FSDP's buffers), per step, the overhead over the no-hook loop, and the trial size;
beside them the write floor: the trial's bytes at this machine's measured sequential write speed.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

RANK = r"""
import json, sys, time, torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard
fsdp, variant, out_dir, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
torch.set_num_threads(1)
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
layers = []
for _ in range(24):
    layers += [torch.nn.Linear(136, 136), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers)
crit = torch.nn.MSELoss()
if fsdp == "fsdp2":
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)
else:
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    model = FullyShardedDataParallel(model, device_id=torch.device("cpu"), use_orig_params=True,
                                     auto_wrap_policy=ModuleWrapPolicy({torch.nn.Linear}))
hook = None
if variant != "none":
    import vigil.pytorch as smd
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1 if variant == "every" else 100),
                    include_collections=["weights", "biases", "gradients", "losses"], include_workers="all")
    hook.register_module(model); hook.register_loss(crit)
torch.manual_seed(1 + rank)
x, y = torch.randn(64, 136), torch.randn(64, 136)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    opt.zero_grad(); crit(model(x), y).backward(); opt.step()
    times.append(time.perf_counter() - t0)
t0 = time.perf_counter()
if hook is not None:
    hook.close()
close = time.perf_counter() - t0
dist.barrier()
if rank == 0:
    print(json.dumps({"rest": sum(times[2:]) + close, "steps": steps - 2}))
dist.destroy_process_group()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def trial_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def write_speed(tmp):
    """Sequential write speed of the trial's disk (bytes/s): 64 MiB written and fsynced."""
    path = os.path.join(tmp, "speed")
    block = os.urandom(1 << 20)
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        for _ in range(64):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    elapsed = time.perf_counter() - t0
    os.remove(path)
    return (64 << 20) / elapsed


def run(fsdp, variant, steps, tmp):
    out = os.path.join(tmp, fsdp + "-" + variant)
    shutil.rmtree(out, ignore_errors=True)
    port = str(free_port())
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank),
                   WORLD_SIZE="2", LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen([sys.executable, "-c", RANK, fsdp, variant, out, str(steps)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate() for p in procs]
    for p, (_, err) in zip(procs, outputs):
        if p.returncode != 0:
            sys.exit("a rank failed ({}):\n{}".format(p.returncode, err))
    result = json.loads(outputs[0][0].strip().splitlines()[-1])
    result["trial_bytes"] = trial_bytes(out) if os.path.isdir(out) else 0
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per variant (median), default 3")
    parser.add_argument("--steps", type=int, default=60, help="training steps, default 60")
    args = parser.parse_args()
    if args.runs < 1 or args.steps < 3:
        parser.error("--runs must be at least 1 and --steps at least 3")
    tmp = tempfile.mkdtemp(prefix="vigil-fsdp-bench-")
    try:
        speed = write_speed(tmp)
        labels = {"none": "no hook", "every": "hook every step", "interval100": "hook save_interval=100"}
        print("{:<32} {:>14} {:>12} {:>10} {:>10} {:>18}".format(
            "variant", "steps 2- (s)", "ms/step", "overhead", "trial MB", "write floor (ms/step)"))
        for fsdp, variant in [(f, v) for f in ("fsdp2", "fsdp1") for v in ("none", "every", "interval100")]:
            runs = [run(fsdp, variant, args.steps, tmp) for _ in range(args.runs)]
            rest = statistics.median(r["rest"] for r in runs)
            per_step = 1e3 * rest / runs[0]["steps"]
            base = rest if variant == "none" else base
            size = runs[-1]["trial_bytes"]
            floor = 1e3 * size / speed / args.steps
            print("{:<32} {:14.3f} {:12.2f} {:>10} {:10.1f} {:18.3f}".format(
                fsdp.upper() + ", " + labels[variant], rest, per_step, "{:+.1f} %".format(100 * (rest - base) / base), size / 1e6, floor),
                flush=True)
        print("smdebug 1.0.34: no figure (no torch 2; no FSDP support); disk write speed measured: {:.0f} MB/s".format(
            speed / 1e6))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
