#!/usr/bin/env bash
# Builds Vigil with its benchmarks (Release, in build-bench/) and runs them: the workload table of
# bench/run_bench.py (options pass through, e.g. --size-mb 100 --runs 3 --json results.json), then
# the Google Benchmark micro-benchmarks. Generated trials are kept in build-bench/bench-cache.
# Not part of CI: it needs a few GB of disk and page cache, and several minutes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-bench"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build" -DVIGIL_BUILD_BENCH=ON -DVIGIL_BUILD_TESTS=OFF >/dev/null
echo "== workloads"
/usr/bin/python3 "$root/bench/run_bench.py" --build "$build" --cache "$build/bench-cache" "$@"
echo "== status board: a rule firing at every step"
"$build/bin/vigil_status_bench"
echo "== micro-benchmarks"
"$build/bin/vigil_micro_bench" --benchmark_min_time=0.2
