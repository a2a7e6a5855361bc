"""The PyTorch hook's cost per value on the training thread, split into its parts.

The capture workload of bench/pytorch_hook_bench.py (24 x Linear(136, 136) + ReLU, batch 64, SGD, fp32, one thread; 97
values a saving step) as several copies of the model in one process, their steps interleaved so that
the machine's load drifts over all of them alike, each timed by the training thread's CPU time:

  none          the model alone
  no-op hooks   Python hooks that do nothing where Vigil attaches its own (the model's forward
                pre-hook, every module's and the loss's forward hook, every parameter's gradient hook):
                PyTorch's dispatch into Python
  vigil         vigil.pytorch.Hook saving weights, biases, gradients and losses at every step
  no copy       the same hook with the writer's write_address a no-op: the hook's Python alone
  own buffers   the same hook copying each value into a buffer of its own, reused every step and
                read by no other thread, instead of into the writer's queue
  floor         the model alone, each step that the hooks save copying each weight, bias and gradient
                once into buffers of its own (torch._foreach_copy_, no hook): the least capture costs
                the training thread
  none 2        a second model alone, made last: the noise floor (two identical models' steps differ
                by their memory's placement)

The variants run in a shuffled order each round; the mean is taken of each step against the first
model's step of the same round. Two identical models' steps differ by up to ~1 % (where their memory
lies), which is as much as the save_interval=100 figure itself; so at an interval above 1 the
`vigil` model is then also measured against itself: blocks of save_interval steps with the hook's
step pre-hook attached (one saving step, the rest steps that save nothing) and removed (the model
alone, no hook of Vigil's left on it), in pairs of shuffled order (--blocks pairs). Printed per
position in the block (the saving step, the two after it, while the writer works on the other core,
and the rest) and as the mean step, which is the row's figure.

usage: python bench/pytorch_hook_value_bench.py [--steps N] [--save-interval N] [--blocks N] [--out-dir DIR]
Prints per variant the training thread CPU time per step (minimum, 10th percentile, median, mean),
what each adds to `none` at the 10th percentile per step and per value and in % of the mean (the
figure for --save-interval 100: one saving step in 100, in-process, where the process bench's
wall time moves ±10 % from one process to the next), and the training thread's minor
page faults per step, with the load average before and after. See docs/performance.md, "Per-value
cost (hookvalue)".
"""
import argparse
import ctypes
import math
import os
import random
import resource
import shutil
import sys
import tempfile
import time

VALUES_PER_STEP = 97  # 24 weights, 24 biases, their 48 gradients and the loss


def make_model(torch):
    layers = []
    for _ in range(24):
        layers += [torch.nn.Linear(136, 136), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers), torch.nn.MSELoss()


class _WriterStandIn:
    """The hook's writer with write_address replaced (every other call goes to the real writer):
    `keep` False drops each value, True copies it into a buffer of its own, reused every step."""

    def __init__(self, real, keep):
        self.real, self.keep, self.buffers = real, keep, {}

    def write_address(self, name, address, shape, dtype, *rest):
        if self.keep:
            nbytes = math.prod(shape) * dtype.itemsize
            buffer = self.buffers.get(name)
            if buffer is None:
                buffer = self.buffers[name] = ctypes.create_string_buffer(max(nbytes, 1))
            ctypes.memmove(buffer, address, nbytes)

    def __getattr__(self, name):
        return getattr(self.real, name)


def same_model_blocks(model, hook, step, interval, pairs):
    """([on block], [off block]): each block the training thread CPU of `interval` steps, the first of
    the on blocks the hook's saving step; the hook's step pre-hook attached for the on blocks, removed
    for the off ones (on steps that save nothing the hook keeps nothing else on the model)."""
    pre_hooks = dict(model._forward_pre_hooks)
    while (hook.step + 1) % interval:  # the first on block begins with a saving step
        step()
    on, off = [], []
    try:
        for _ in range(pairs):
            for hooked in random.sample((True, False), 2):
                model._forward_pre_hooks.clear()
                if hooked:
                    model._forward_pre_hooks.update(pre_hooks)
                times = []
                for _ in range(interval):
                    t0 = time.thread_time()
                    step()
                    times.append(time.thread_time() - t0)
                (on if hooked else off).append(times)
    finally:
        model._forward_pre_hooks.clear()
        model._forward_pre_hooks.update(pre_hooks)
    return on, off


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steps of each variant, default 200")
    parser.add_argument("--save-interval", type=int, default=1,
                        help="the hooks' save_interval (default 1: every step saves); at 100 the figure that "
                        "matters is the mean, which spreads the saving step over the 99 that save nothing")
    parser.add_argument("--blocks", type=int, default=60,
                        help="at a save interval above 1: pairs of blocks of save_interval steps, the hook on and "
                        "off in turns on the same model (default 60; 0: none)")
    parser.add_argument("--rows", help="append issue 29's row for this measure here (bench/rows.py): the hook's "
                        "training thread CPU added in one process, beside the floor and the noise floor")
    parser.add_argument("--out-dir", help="where the hooks' trials go (default: a temporary folder, on "
                        "/dev/shm where there is one); removed at the end")
    args = parser.parse_args()
    import torch
    import vigil.pytorch as smd
    from vigil.capture import pytorch as hook_module
    torch.manual_seed(0)
    torch.set_num_threads(1)
    base = args.out_dir or tempfile.mkdtemp(prefix="vigil-value-bench-",
                                            dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    x, y = torch.randn(64, 136), torch.randn(64, 136)
    setups, hooks = {}, []
    setups["none"] = make_model(torch)
    model, crit = make_model(torch)
    model.register_forward_pre_hook(lambda m, i: None)
    for m in model.modules():
        m.register_forward_hook(lambda m, i, o: None)
    crit.register_forward_hook(lambda m, i, o: None)
    for p in model.parameters():
        p.register_hook(lambda g: None)
    setups["no-op hooks"] = (model, crit)
    for label, keep in (("vigil", None), ("no copy", False), ("own buffers", True)):
        model, crit = make_model(torch)
        hook = smd.Hook(out_dir=os.path.join(base, label.replace(" ", "-")), save_config=smd.SaveConfig(save_interval=args.save_interval),
                        include_collections=["weights", "biases", "gradients", "losses"])
        hook.register_module(model)
        hook.register_loss(crit)
        hook.set_mode(smd.modes.TRAIN)
        if keep is not None:
            hook._writer = _WriterStandIn(hook._writer, keep)
        hooks.append(hook)
        setups[label] = (model, crit)
    # The least capture can cost the training thread: each weight, bias and gradient copied once a
    # step into buffers of its own (one torch._foreach_copy_ for each kind), no hook, no Python per value
    setups["floor"] = make_model(torch)
    floor_params = list(setups["floor"][0].parameters())
    floor_copies = ([torch.empty_like(p) for p in floor_params], [torch.empty_like(p) for p in floor_params])
    # A second model without hooks, made last: how far two identical models' steps differ (memory
    # placement), the noise floor of every figure here
    setups["none 2"] = make_model(torch)
    # The hook writes by address only to the writer's own type: the stand-ins are taken for it.
    real_type = hook_module._QueuedWriter
    hook_module._QueuedWriter = _WriterStandIn
    optimizers = {k: torch.optim.SGD(m.parameters(), lr=1e-3) for k, (m, _) in setups.items()}

    floor_steps = [0]

    def step(k):
        m, c = setups[k]
        copy = k == "floor" and floor_steps[0] % args.save_interval == 0  # the floor saves when the hooks do
        if k == "floor":
            floor_steps[0] += 1
        if copy:
            torch._foreach_copy_(floor_copies[0], floor_params)
        optimizers[k].zero_grad()
        c(m(x), y).backward()
        if copy:
            torch._foreach_copy_(floor_copies[1], [p.grad for p in floor_params])
        optimizers[k].step()

    load0 = os.getloadavg()
    times, faults = {k: [] for k in setups}, {k: 0 for k in setups}
    try:
        for k in setups:  # warm up (step 0 of each hook opens its trial)
            for _ in range(5):
                hook_module._QueuedWriter = real_type if k == "vigil" else _WriterStandIn
                step(k)
        order = list(setups)
        for _ in range(args.steps):
            random.shuffle(order)  # no variant always runs after the same one (caches, the writer's thread)
            for k in order:
                hook_module._QueuedWriter = real_type if k == "vigil" else _WriterStandIn
                f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
                t0 = time.thread_time()
                step(k)
                times[k].append(time.thread_time() - t0)
                faults[k] += resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f0
        hook_module._QueuedWriter = real_type
        blocks = same_model_blocks(setups["vigil"][0], hooks[0], lambda: step("vigil"), args.save_interval,
                                   args.blocks) if args.save_interval > 1 and args.blocks > 0 else None
    finally:
        hook_module._QueuedWriter = real_type
        for hook in hooks:
            hook.close()
        if not args.out_dir:
            shutil.rmtree(base, ignore_errors=True)
    print("torch {}, {} timed steps per variant, save_interval {}, load {:.2f} {:.2f} {:.2f} -> {:.2f} {:.2f} {:.2f}".format(
        torch.__version__, args.steps, args.save_interval, *load0, *os.getloadavg()))
    tenth = len(times["none"]) // 10
    none = sorted(times["none"])[tenth]
    none_mean = sum(times["none"]) / len(times["none"])
    # Each step against the no-hook model's step of the same round: the round's drift cancels
    means = {k: sum(t - n for t, n in zip(ts, times["none"])) / len(ts) + none_mean for k, ts in times.items()}
    for k, ts in times.items():
        mean = means[k]
        ts.sort()
        added = ts[tenth] - none
        print("  {:<12} thread CPU a step: min {:.3f} ms, 10th pct {:.3f} ms, median {:.3f} ms, mean {:.3f} ms; added "
              "{:+.3f} ms at the 10th pct ({:+.1f} us a value), {:+.2f} % of the mean; {:.0f} page faults a step".format(
                  k, 1e3 * ts[0], 1e3 * ts[tenth], 1e3 * ts[len(ts) // 2], 1e3 * mean, 1e3 * added,
                  1e6 * added / VALUES_PER_STEP, 100 * (mean - none_mean) / none_mean, faults[k] / len(ts)))
    if blocks is not None:
        on, off = blocks
        n = args.save_interval

        def at(blocks_, positions):
            return sum(b[i] for b in blocks_ for i in positions) / (len(blocks_) * len(positions))
        off_mean = at(off, range(n))
        print("  vigil, the same model with the hook on and off by blocks of {} steps ({} pairs; off: {:.3f} ms a "
              "step):".format(n, len(on), 1e3 * off_mean))
        for label, positions in (("the saving step", [0]), ("the step after it", [1]), ("the second after", [2]),
                                 ("the other {}".format(n - 3), range(3, n))):
            added = at(on, positions) - at(off, positions)
            print("    {:<18} added {:+8.1f} us".format(label, 1e6 * added))
        same_model = 100 * (at(on, range(n)) - off_mean) / off_mean
        pairs = sorted(sum(a) / n - sum(b) / n for a, b in zip(on, off))
        print("    mean step          added {:+8.1f} us, {:+.2f} % (pairs' 10th to 90th percentile {:+.1f} to {:+.1f} "
              "us)".format(1e6 * (at(on, range(n)) - off_mean), same_model, 1e6 * pairs[len(pairs) // 10],
                           1e6 * pairs[len(pairs) * 9 // 10]))
    if args.rows:
        added = {k: 100 * (means[k] - none_mean) / none_mean for k in means}
        target = 10.0 if args.save_interval == 1 else 1.0
        what = "every step" if args.save_interval == 1 else "save_interval={}".format(args.save_interval)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import rows
        if blocks is None:
            rows.add(args.rows, "hook on torch {}, eager, {}: training thread CPU in one process, steps paired "
                     "(+%)".format(torch.__version__, what), round(added["vigil"], 1), "%",
                     target="<= {:g} %".format(target), met=added["vigil"] <= target,
                     note="floor (one copy of each value) {:+.1f} %, a second model without hooks {:+.1f} %".format(
                         added["floor"], added["none 2"]))
        else:
            rows.add(args.rows, "hook on torch {}, eager, {}: training thread CPU in one process, the same model "
                     "with the hook on and off by blocks (+%)".format(torch.__version__, what), round(same_model, 2),
                     "%", target="<= {:g} %".format(target), met=same_model <= target,
                     note="against other models, steps paired: {:+.1f} %; floor {:+.1f} %, a second model without "
                     "hooks {:+.1f} % (where each model's memory lies)".format(added["vigil"], added["floor"],
                                                                              added["none 2"]))


if __name__ == "__main__":
    main()
