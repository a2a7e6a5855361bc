#!/usr/bin/env bash
# Builds Vigil with its benchmarks (Release, in build-bench/) and runs every benchmark of issue 29's
# table, then prints that table: each row with the real smdebug 1.0.34's figure beside Vigil's (when
# .venv-smdebug exists: scripts/python-envs.sh makes it) and the target.
#   1. bench/run_bench.py (options pass through, e.g. --size-mb 100 --runs 3 --many-steps 1000,10000
#      --json results.json): the big trial, many small steps at several sizes, live latency;
#   2. bench/object_storage_bench.py: a trial over the loopback S3 server;
#   3. bench/pytorch_hook_bench.py: the hook on torch 2.13 (eager, bf16, compile), smdebug's on 1.13;
#      bench/pytorch_hook_value_bench.py: the same hook's cost in one process, steps paired, at every
#      step and at save_interval=100 (a process's wall time moves ±10 % from one to the next);
#   4. the status board and Google Benchmark micro-benchmarks.
# Generated trials are kept in build-bench/bench-cache. Not part of CI: it needs a few GB of disk and
# page cache, and several minutes (the 100,000-step trial takes minutes to generate the first time).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-bench"
"$root/scripts/install-deps.sh"
"$root/scripts/python-envs.sh" >/dev/null
"$root/scripts/build.sh" "$build" -DVIGIL_BUILD_BENCH=ON -DVIGIL_BUILD_TESTS=OFF >/dev/null
rows="$build/issue29-rows.jsonl"
rm -f "$rows"
smdebug=()
if [ -x "$root/.venv-smdebug/bin/python" ]; then smdebug=(--smdebug-python "$root/.venv-smdebug/bin/python"); fi
echo "== workloads"
/usr/bin/python3 "$root/bench/run_bench.py" --build "$build" --cache "$build/bench-cache" --rows "$rows" \
  "${smdebug[@]}" "$@"
echo "== object storage"
VIGIL_BUILD_DIR="$build" /usr/bin/python3 "$root/bench/object_storage_bench.py" --rows "$rows" "${smdebug[@]}"
echo "== the PyTorch hook (the .venv's torch and its installed vigil wheel)"
"$root/.venv/bin/python" "$root/bench/pytorch_hook_bench.py" --rows "$rows" "${smdebug[@]}"
echo "== the PyTorch hook in one process, steps paired (resolves what the processes' spread cannot)"
"$root/.venv/bin/python" "$root/bench/pytorch_hook_value_bench.py" --steps 400 --rows "$rows"
"$root/.venv/bin/python" "$root/bench/pytorch_hook_value_bench.py" --steps 1000 --save-interval 100 --rows "$rows"
echo "== status board: a rule firing at every step"
"$build/bin/vigil_status_bench"
echo "== micro-benchmarks"
"$build/bin/vigil_micro_bench" --benchmark_min_time=0.2
echo "== issue 29's table"
/usr/bin/python3 "$root/bench/rows.py" "$rows"
