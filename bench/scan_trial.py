#!/usr/bin/python3
"""The Python full scan of bench/run_bench.py: mean(|x|) of every tensor value at every step and
worker, as numpy arrays from vigil's Tensor.value() (smdebug's API). Prints one JSON line."""
import json
import sys
import time

t0 = time.perf_counter()
import numpy as np  # noqa: E402  (timed: the import is part of the job)

import vigil  # noqa: E402
from vigil.exceptions import TensorUnavailableForStep  # noqa: E402

trial = vigil.create_trial(sys.argv[1])
names = trial.tensor_names()
values = nbytes = 0
checksum = 0.0
for step in trial.steps():
    for name in names:
        tensor = trial.tensor(name)
        try:
            workers = tensor.workers(step)
        except TensorUnavailableForStep:
            continue  # not saved at this step
        for worker in workers:
            v = tensor.value(step, worker=worker)
            checksum += float(np.abs(v).mean())  # numpy: in the tensor's dtype, as smdebug computes it
            nbytes += v.nbytes
            values += 1
print(json.dumps({"workload": "scan_python", "values": values, "tensor_bytes": nbytes, "checksum": checksum,
                  "seconds": time.perf_counter() - t0}))
