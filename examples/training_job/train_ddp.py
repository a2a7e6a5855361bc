"""A training script as a SageMaker training container runs it, for `vigil train`: every host runs it;
it finds its rank and its peers in the environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT),
trains a small regression model with torch.distributed (gloo, DistributedDataParallel), and is
captured by the hook SageMaker's Debugger configures (vigil.pytorch.Hook.create_from_json_file reads
the DebugHookConfig that vigil train wrote for this host).

Hyperparameters (HyperParameters, as strings; SM_HPS): steps (default 40), step-delay (seconds per
step, default 0.02), lr (default 0.05; "0" gives a loss that never falls), hang ("true": sleep after
training instead of ending). The host's view of its environment is written to
$SM_OUTPUT_DATA_DIR/environment-<host>.json (a name of its own: SageMaker merges every host's
output/data into one output.tar.gz), the model to $SM_MODEL_DIR/model.pt by rank 0 alone.

usage: vigil train examples/training_job/two_host_job.json -- /usr/bin/python3 examples/training_job/train_ddp.py
"""
import json
import os
import time

import torch
import torch.distributed as dist

import vigil.pytorch as smd


def main():
    hps = json.loads(os.environ.get("SM_HPS", "{}"))
    steps = int(hps.get("steps", 40))
    delay = float(hps.get("step-delay", 0.02))
    lr = float(hps.get("lr", 0.05))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()

    # Proof that the hosts really talk to each other: the sum of the ranks over the group.
    rank_sum = torch.tensor([float(rank)])
    dist.all_reduce(rank_sum)
    host = os.environ.get("SM_CURRENT_HOST", "algo-1")
    with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], "environment-{}.json".format(host)), "w") as f:
        json.dump({"rank": rank, "world_size": world, "rank_sum": rank_sum.item(), "cwd": os.getcwd(),
                   "env": {k: v for k, v in os.environ.items() if k.startswith(("SM_", "TRAINING_JOB", "MASTER_", "RANK",
                                                                                "WORLD_SIZE", "SMDEBUG", "SMPROFILER"))}},
                  f, indent=1)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    criterion = torch.nn.MSELoss()
    hook = smd.Hook.create_from_json_file()
    if hook is not None:
        hook.register_module(model)
        hook.register_loss(criterion)
        hook.set_mode(smd.modes.TRAIN)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr)
    g = torch.Generator().manual_seed(1 + rank)
    x = torch.randn(256, 8, generator=g)
    y = x.sum(1, keepdim=True)
    for step in range(steps):
        j = (step * 32) % 256 if lr > 0 else 0  # lr 0: one batch, so the loss stays exactly where it is
        opt.zero_grad()
        loss = criterion(ddp(x[j:j + 32]), y[j:j + 32])
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print("rank {} step {:3d} loss {:.4f}".format(rank, step, loss.item()), flush=True)
        time.sleep(delay)
    if hook is not None:
        hook.close()
    if rank == 0:
        torch.save(model.state_dict(), os.path.join(os.environ["SM_MODEL_DIR"], "model.pt"))
    print("rank {} done after {} steps".format(rank, steps), flush=True)
    if str(hps.get("hang", "false")).lower() == "true":
        while True:
            time.sleep(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
