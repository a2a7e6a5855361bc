"""A small training run with a real pathology, captured by vigil.pytorch.Hook: a deep sigmoid network
with a tiny initialisation, whose early layers' gradients vanish. scripts/run-example.sh runs it
while `vigil evaluate` follows the trial live.

usage: /usr/bin/python3 train_vanishing_gradients.py OUT_DIR [--steps N] [--step-delay SECONDS]
"""
import argparse
import time

import torch

import vigil.pytorch as smd


class DeepSigmoid(torch.nn.Module):
    def __init__(self, depth=12, width=32):
        super().__init__()
        layers = []
        for _ in range(depth):
            lin = torch.nn.Linear(width, width)
            torch.nn.init.normal_(lin.weight, std=0.01)  # tiny init: sigmoid' <= 1/4 shrinks gradients per layer
            torch.nn.init.zeros_(lin.bias)
            layers += [lin, torch.nn.Sigmoid()]
        self.body = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(width, 1)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", help="the trial folder the hook writes")
    parser.add_argument("--steps", type=int, default=60, help="training steps (default 60)")
    parser.add_argument("--step-delay", type=float, default=0.05, help="seconds of pause per step, so the "
                        "evaluator is seen following the run (default 0.05)")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DeepSigmoid()
    criterion = torch.nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_interval=2),
                    include_collections=["weights", "biases", "gradients", "losses"])
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_mode(smd.modes.TRAIN)

    g = torch.Generator().manual_seed(1)
    x = torch.randn(512, 32, generator=g)
    y = torch.sin(x.sum(1, keepdim=True))
    for step in range(args.steps):
        j = (step * 64) % 512
        opt.zero_grad()
        loss = criterion(model(x[j:j + 64]), y[j:j + 64])
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print("step {:3d}  loss {:.4f}".format(step, loss.item()), flush=True)
        time.sleep(args.step_delay)
    hook.close()
    print("training done: {} steps, trial in {}".format(args.steps, args.out_dir), flush=True)


if __name__ == "__main__":
    main()
