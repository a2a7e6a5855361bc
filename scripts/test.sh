#!/usr/bin/env bash
# Builds and runs every test: the normal build, then the host, plugin and reliability tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer, then each libFuzzer harness for a few seconds.
# Installs what is missing first.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"

jobs="$(nproc)"
status=0

echo "== build (Release)"
"$root/scripts/build.sh" "$root/build"
echo "== tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs" || status=1

echo "== Python tests"
VIGIL_BUILD_DIR="$root/build" PYTHONPATH="$root/build/python" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider "$root/tests/python" || status=1

echo "== build (ASan + UBSan)"
# The host and plugin tests. The Python module is left out (an ASan-built extension cannot load into
# the system python3), and so are the built-in rules' pathology runs (the same code paths as the
# plugin tests, run above without sanitizers). -O1 -g1 keeps the build and the runs quick.
"$root/scripts/build.sh" "$root/build-sanitize" -DVIGIL_SANITIZE=ON -DVIGIL_BUILD_PYTHON=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DVIGIL_TEST_SUITES="format;trial;trial_scenarios;writer;plugins;sdk;abi;reliability"
echo "== tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build-sanitize" --output-on-failure -j "$jobs" || status=1

echo "== fuzzing (short; scripts/fuzz.sh --seconds 3600 for a long run)"
"$root/scripts/fuzz.sh" --seconds 10 || status=1

exit $status
