"""Training scripts for the differential test of the PyTorch hook (test_hook_vs_smdebug.py), written
for smdebug's hook (`import smdebug.pytorch as smd`) and run unchanged twice: on the real smdebug
1.0.34, and on Vigil through vigil.compat. Each scenario writes one trial, OUT_ROOT/<scenario>.

Most scenarios place `hook.save_tensor` calls at one kind of point in the loop, so that the trials
show where each kind of hook callback writes the pending values. A value's first element tells
where it was saved (100 * global step + an index), so a value that lands in a later step says so.

usage: hook_scenarios.py OUT_ROOT [SCENARIO ...]
"""
import os
import shutil
import sys

import torch

import smdebug.pytorch as smd

try:  # the real smdebug only: its error handling agent disables the hook silently
    from smdebug.core.utils import error_handling_agent
except ImportError:
    error_handling_agent = None

TRAIN, EVAL = smd.modes.TRAIN, smd.modes.EVAL
NEVER = 10 ** 9  # a start_step no run reaches: the collection is not saved in that mode


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 6)
        self.relu = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(6, 3)
        # Registered last and never called: its parameters get no gradient. A hook that watched one
        # parameter's gradient (the last) for the backward pass would miss every backward pass.
        self.unused = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class Run:
    """A model, its loss and optimizer, fixed data, and a hook saving weights, losses, gradients, the
    outputs of fc1 and relu ("acts", so that the index shows which module hook came first) and the
    custom collections cA and cB."""

    def __init__(self, out_dir, save_interval=1, eval_config=None):
        torch.manual_seed(0)
        self.model = Net()
        self.crit = torch.nn.CrossEntropyLoss()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(1)
        self.x, self.y = torch.randn(16, 4, generator=g), torch.randint(0, 3, (16,), generator=g)
        modes = {TRAIN: smd.SaveConfigMode(save_interval=save_interval)}
        if eval_config is not None:
            modes[EVAL] = eval_config
        self.hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(mode_save_configs=modes),
                             include_collections=["weights", "losses", "gradients", "acts", "cA", "cB"])
        self.hook.get_collection("acts").include(["fc1_output", "relu_output"])
        # Custom collections must exist with a regex (or names) before the first step: smdebug refuses
        # empty ones, and fails on one it makes later (its reduction_config is None).
        for name in ("cA", "cB"):
            c = self.hook.get_collection(name)
            c.include("^" + name + "_")
            c.reduction_config = smd.ReductionConfig(save_raw_tensor=True)
        self.hook.register_module(self.model)
        self.hook.register_loss(self.crit)
        self.step = -1  # the global step, counted here as the hook counts it

    def tag(self, k=0):
        return torch.tensor([100.0 * self.step + k, -1.5], dtype=torch.float32)

    def train_step(self, before_forward=None, before_loss=None, before_backward=None, after_step=None):
        """One TRAIN step; each callback (run, mode) is called at its point of the loop."""
        self.step += 1
        if before_forward:
            before_forward(self)
        self.opt.zero_grad()
        out = self.model(self.x)
        if before_loss:
            before_loss(self, out)
        loss = self.crit(out, self.y)
        if before_backward:
            before_backward(self)
        loss.backward()
        self.opt.step()
        if after_step:
            after_step(self)

    def eval_step(self, before_loss=None, after_loss=None):
        self.step += 1
        with torch.no_grad():
            out = self.model(self.x)
            if before_loss:
                before_loss(self, out)
            self.crit(out, self.y)
            if after_loss:
                after_loss(self, out)

    def close(self):
        self.hook.close()


def before_module_forward(out_dir):
    """save_tensor before the model's forward: written at the first module forward hook (fc1's)."""
    r = Run(out_dir)
    r.hook.set_mode(TRAIN)
    for _ in range(3):
        r.train_step(before_forward=lambda r: r.hook.save_tensor("cA_pre_forward", r.tag(), "cA"))
    r.close()


def before_loss_forward(out_dir):
    """save_tensor between the model and the registered loss: written at the loss's forward hook."""
    r = Run(out_dir)
    r.hook.set_mode(TRAIN)
    for _ in range(3):
        r.train_step(before_loss=lambda r, out: r.hook.save_tensor("cA_pre_loss", torch.softmax(out, 1), "cA"))
    r.close()


def before_backward(out_dir):
    """save_tensor after the loss, before backward: written at the first gradient hook, after the
    first gradient."""
    r = Run(out_dir)
    r.hook.set_mode(TRAIN)
    for _ in range(3):
        r.train_step(before_backward=lambda r: r.hook.save_tensor("cA_pre_backward", r.tag(), "cA"))
    r.close()


def step_boundary(out_dir):
    """save_tensor after optimizer.step(), every step of a run saving every 2nd step: a value from a
    saving step is dropped by the next (non-saving) step's backward pass; one from a non-saving step
    is written at the next step's first module forward hook; the last one is lost at close."""
    r = Run(out_dir, save_interval=2)
    r.hook.set_mode(TRAIN)
    for _ in range(6):
        r.train_step(after_step=lambda r: r.hook.save_tensor("cA_after_step", r.tag(), "cA"))
    r.close()


def non_saving_steps(out_dir):
    """save_tensor before the loss on every step of a run saving every 3rd step: written on the
    saving steps, dropped on the others by their backward pass (never carried to the next step)."""
    r = Run(out_dir, save_interval=3)
    r.hook.set_mode(TRAIN)
    for _ in range(7):
        r.train_step(before_loss=lambda r, out: r.hook.save_tensor("cA_every_step", r.tag(), "cA"))
    r.close()


def across_set_mode(out_dir):
    """A value saved at the end of the last TRAIN step, then EVAL steps (no backward) of which only
    every 2nd from mode step 2 saves, with a value saved after each EVAL loss, then TRAIN again: values
    wait through the non-saving EVAL steps, a newer value of the same name replaces the pending one,
    and what is pending at set_mode lands in the next mode's first saving step."""
    r = Run(out_dir, eval_config=smd.SaveConfigMode(save_interval=2, start_step=2))
    r.hook.set_mode(TRAIN)
    r.train_step()
    r.train_step(after_step=lambda r: r.hook.save_tensor("cA_end_of_train", r.tag(), "cA"))
    r.hook.set_mode(EVAL)
    for _ in range(5):
        r.eval_step(after_loss=lambda r, out: r.hook.save_tensor("cA_eval", r.tag(1), "cA"))
    r.hook.set_mode(TRAIN)
    r.train_step()
    r.train_step()
    r.close()


def before_close(out_dir):
    """save_tensor after the last step's backward, then close(): never written."""
    r = Run(out_dir)
    r.hook.set_mode(TRAIN)
    r.train_step()
    r.train_step(after_step=lambda r: r.hook.save_tensor("cA_before_close", r.tag(), "cA"))
    r.close()


def several_collections(out_dir):
    """save_tensor into two collections at once, and two names saved before the same flush."""
    r = Run(out_dir)
    r.hook.set_mode(TRAIN)

    def save(r, out):
        r.hook.save_tensor("cA_both", r.tag(), ["cA", "cB"])
        r.hook.save_tensor("cB_second", r.tag(1), ("cB",))
    for _ in range(2):
        r.train_step(before_loss=save)
    r.close()


def scalars_on_non_saving_steps(out_dir):
    """save_scalar on every step of a run saving every 2nd step."""
    r = Run(out_dir, save_interval=2)
    r.hook.set_mode(TRAIN)
    for _ in range(4):
        r.train_step(after_step=lambda r: r.hook.save_scalar("tag", float(r.step)))
    r.close()


def gradient_accumulation(out_dir):
    """Two half batches per optimizer step (zero_grad before the first, step after the second): each
    forward call is a step, and a step's saved gradient is its own backward pass's, not the running
    sum that .grad holds after the second (which a post-accumulate-grad hook would see)."""
    r = Run(out_dir)
    r.hook.set_mode(TRAIN)
    for i in range(6):
        r.step += 1
        if i % 2 == 0:
            r.opt.zero_grad()
        half = slice(0, 8) if i % 2 == 0 else slice(8, 16)
        r.crit(r.model(r.x[half]), r.y[half]).backward()
        if i % 2 == 1:
            r.opt.step()
    r.close()


def functional_gradients(out_dir):
    """Gradients taken with torch.autograd.grad and applied by hand (.grad stays None): torch 2 runs
    the parameters' tensor hooks for them (1.13 does not), and no post-accumulate-grad hook runs."""
    r = Run(out_dir)
    r.hook.set_mode(TRAIN)
    params = [p for p in r.model.parameters() if p.requires_grad]
    for _ in range(3):
        r.step += 1
        grads = torch.autograd.grad(r.crit(r.model(r.x), r.y), params, allow_unused=True)
        with torch.no_grad():
            for p, g in zip(params, grads):
                if g is not None:
                    p.sub_(0.1 * g)
    r.close()


class MLP(torch.nn.Module):
    """The mlp family of the pathology corpus (shared/fixtures/pathologies, its labels' model.repr), named
    as there: its tensors are MLP_layer1.fc.weight, ..."""

    def __init__(self):
        super().__init__()
        self.layer1 = torch.nn.Sequential()
        self.layer1.add_module("fc", torch.nn.Linear(8, 12))
        self.layer1.add_module("relu", torch.nn.ReLU())
        self.layer2 = torch.nn.Sequential()
        self.layer2.add_module("fc", torch.nn.Linear(12, 12))
        self.layer2.add_module("relu", torch.nn.ReLU())
        self.layer3 = torch.nn.Sequential()
        self.layer3.add_module("fc", torch.nn.Linear(12, 8))
        self.layer3.add_module("tanh", torch.nn.Tanh())
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.layer3(self.layer2(self.layer1(x))))


def pathology_pattern(out_dir, cycles=15):
    """The loop and save configuration that wrote the pathology corpus, as its labels describe them:
    `cycles` times 2 TRAIN steps (a fresh batch of 32) and 1 EVAL step (a fixed set of 96), Adam;
    labels and predictions saved with save_tensor in the EVAL steps before the loss call."""
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(2)
    centres = 2.0 * torch.randn(4, 8, generator=g)

    def batch(n):
        y = torch.randint(0, 4, (n,), generator=g)
        return centres[y] + torch.randn(n, 8, generator=g), y

    x_val, y_val = batch(96)
    model = MLP()
    crit = torch.nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)

    def per_mode(train, eval_):  # TRAIN and EVAL save intervals; None: never
        modes = {m: smd.SaveConfigMode(start_step=NEVER) for m in smd.modes}
        for m, interval in ((TRAIN, train), (EVAL, eval_)):
            if interval is not None:
                modes[m] = smd.SaveConfigMode(save_interval=interval)
        return modes

    train_every, train_2nd = per_mode(1, None), per_mode(2, None)
    eval_every, both_every = per_mode(None, 1), per_mode(1, 1)
    collections = {
        "weights": (None, train_every), "biases": (None, train_every), "gradients": (None, train_every),
        "losses": (None, both_every), "relu_output": (".*relu_output", train_2nd),
        "relu_input": (".*relu_input", train_2nd), "tanh_sigmoid_input": (".*tanh_input|.*sigmoid_input", train_2nd),
        "labels": ("^labels$", eval_every), "predictions": ("^predictions$", eval_every),
    }
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=list(collections))
    for name, (regex, modes) in collections.items():
        c = hook.get_collection(name)
        if regex is not None:
            c.include(regex)
        c.save_config = smd.SaveConfig(mode_save_configs=dict(modes))
    hook.register_module(model)
    hook.register_loss(crit)
    for _ in range(cycles):
        hook.set_mode(TRAIN)
        model.train()
        for _ in range(2):
            xb, yb = batch(32)
            opt.zero_grad()
            loss = crit(model(xb), yb)
            loss.backward()
            opt.step()
        hook.set_mode(EVAL)
        model.eval()
        with torch.no_grad():
            logits = model(x_val)
            hook.save_tensor("labels", y_val, "labels")
            hook.save_tensor("predictions", logits.argmax(1), "predictions")
            crit(logits, y_val)
    hook.close()


SCENARIOS = {f.__name__: f for f in (before_module_forward, before_loss_forward, before_backward, step_boundary,
                                     non_saving_steps, across_set_mode, before_close, several_collections,
                                     scalars_on_non_saving_steps, pathology_pattern, gradient_accumulation,
                                     functional_gradients)}


def main(argv):
    root, names = argv[0], argv[1:] or list(SCENARIOS)
    torch.set_num_threads(1)
    for name in names:
        out = os.path.join(root, name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(root, exist_ok=True)
        SCENARIOS[name](out)
        if error_handling_agent is not None and error_handling_agent.disable_smdebug:
            sys.exit("smdebug disabled itself in scenario " + name)
    print("done", " ".join(names))


if __name__ == "__main__":
    main(sys.argv[1:])
