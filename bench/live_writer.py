"""The writer of the live workload run against the real smdebug (bench/smdebug_side.py live): writes
--steps steps of ten 1,024-element float32 tensors into TRIAL with random 20-80 ms pauses, as
`vigil_bench live` does for Vigil's evaluator, and then writes --publish FILE: one JSON object
{"published": [t0, t1, ...]}, the wall-clock time (time.time()) at which each step could be judged.
A step can be judged once end_step() returned (its index file is published); step 0 once the
collection files are there too, which the writer publishes as step 1 begins.

    PYTHONPATH=build/python /usr/bin/python3 bench/live_writer.py TRIAL --steps 100 --publish FILE
"""
import argparse
import json
import os
import random
import time

import numpy as np

from vigil.modes import ModeKeys
from vigil.writer import TrialWriter


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trial")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--publish", required=True)
    args = ap.parse_args()
    if args.steps < 2:
        ap.error("--steps must be at least 2")
    rng = random.Random(7)
    pool = np.random.default_rng(7).standard_normal(1 << 16).astype(np.float32)
    writer = TrialWriter(args.trial, save_interval=1)
    published = []
    for step in range(args.steps):
        time.sleep(rng.uniform(0.020, 0.080))  # training between saves
        writer.begin_step(ModeKeys.TRAIN)
        if step == 1:
            published.insert(0, time.time())  # the collection files have just been published
        for i in range(10):
            start = (step * 131 + i * 977) % 60000
            writer.save_tensor("layer%d.weight" % i, pool[start:start + 1024], collections=["weights"])
        writer.end_step()
        if step > 0:
            published.append(time.time())
    writer.close()
    tmp = args.publish + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"published": published}, f)
    os.replace(tmp, args.publish)


if __name__ == "__main__":
    main()
