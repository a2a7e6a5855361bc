#!/usr/bin/env bash
# Builds and runs every test: the normal build, then the host, plugin and reliability tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer, then each libFuzzer harness for a few seconds.
# Installs what is missing first.
set -euo pipefail
# Built plugins must not be writable by other users, or the loader refuses them (docs/reliability.md).
umask 022
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"

jobs="$(nproc)"
status=0
# What failed, repeated at the very end: CI shows only the tail of a long log.
failures=()
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
failed() {  # WHAT [LOG_FILE_OF_FAILED_NAMES]
  status=1
  failures+=("$1")
  if [ -n "${2:-}" ] && [ -s "$2" ]; then
    while IFS= read -r line; do failures+=("    $line"); done <"$2"
  fi
}
# ctest's list of the tests that failed in its last run of BUILD_DIR.
ctest_failed() { echo "$1/Testing/Temporary/LastTestsFailed.log"; }
# pytest's summary lines of failures and errors (-rfE), kept from its output.
pytest_summary() { tee "$1"; grep -E '^(FAILED|ERROR) ' "$1" >"$1.failed" || true; }
# Each stage's heading says when it started, for CI's time figures (docs/install.md).
stage() { echo "== $* [$(date +%T), ${SECONDS}s into scripts/test.sh]"; }

# Each suite of a build must have run tests: ctest prints "No tests were found" and succeeds when a
# build has none, e.g. one configured by scripts/run-example.sh with -DVIGIL_BUILD_TESTS=OFF.
check_suites_ran() {  # BUILD_DIR SUITE...
  local build="$1" suite count
  shift
  for suite in "$@"; do
    # support/ holds the suites' helper library, not a suite.
    [ "$suite" != support ] && [ -f "$root/tests/$suite/CMakeLists.txt" ] || continue
    count="$(ctest --test-dir "$build" -N -L "^suite:$suite\$" | sed -n 's/^Total Tests: //p')"
    if [ "${count:-0}" -eq 0 ]; then
      echo "test.sh: suite '$suite' has no tests in $build" >&2
      failed "suite '$suite' has no tests in $build"
    else
      echo "suite $suite: $count tests"
    fi
  done
}

stage "build (Release)"
# Whatever configured build/ before (run-example.sh turns the tests off), this build has every test
# and the Python module: the options are given, not taken from CMakeCache.txt.
"$root/scripts/build.sh" "$root/build" -DVIGIL_BUILD_TESTS=ON -DVIGIL_BUILD_PYTHON=ON -DVIGIL_WITH_LIBTORCH=ON \
  -UVIGIL_TEST_SUITES
stage "Python environments, Vigil installed into them with pip"
# After build/: the wheel's compiles are then ccache hits.
"$root/scripts/python-envs.sh"
stage "tests"
ctest --test-dir "$root/build" --output-on-failure --no-tests=error -j "$jobs" ||
  failed "ctest (build/)" "$(ctest_failed "$root/build")"
mapfile -t all_suites < <(cd "$root/tests" && ls -d */ | tr -d /)
check_suites_ran "$root/build" "${all_suites[@]}"

stage "Python tests (the installed package and the vigil command's end-to-end scenarios, torch 2.13: .venv)"
# pytest exits with 5 when it collects no test, which fails the run like any other failure. The tests
# import the installed vigil, never build/python (tests/conftest.py refuses it).
VIGIL_BUILD_DIR="$root/build" "$root/.venv/bin/python" -m pytest -q -rfE -p no:cacheprovider "$root/tests/python" \
  "$root/tests/cli" 2>&1 | pytest_summary "$logs/pytest" || failed "pytest (.venv, torch 2.13)" "$logs/pytest.failed"
stage "Python hook suites again on Debian's torch 1.13 (.venv-torch1), the last torch smdebug supported"
hook_suites=(test_pytorch_hook.py test_hook_fidelity.py test_hook_misuse.py test_hook_surface.py
             test_hook_vs_smdebug.py test_xgboost_hook.py test_profiler.py test_compat.py)
VIGIL_BUILD_DIR="$root/build" "$root/.venv-torch1/bin/python" -m pytest -q -rfE -p no:cacheprovider \
  "${hook_suites[@]/#/$root/tests/python/}" 2>&1 | pytest_summary "$logs/pytest1" ||
  failed "pytest (.venv-torch1, torch 1.13)" "$logs/pytest1.failed"

stage "build (ASan + UBSan)"
sanitized_suites="common;format;storage;trial;trial_scenarios;writer;plugin_host;evaluate;profiler;jobs;remote_debug;sdk;abi;reliability"
# The host and plugin tests. The Python module is left out (an ASan-built extension cannot load into
# the system python3), and so are the built-in rules' pathology runs (the same code paths as the
# plugin tests, run above without sanitizers). -O1 -g1 keeps the build and the runs quick.
"$root/scripts/build.sh" "$root/build-sanitize" -DVIGIL_SANITIZE=ON -DVIGIL_BUILD_PYTHON=OFF -DVIGIL_WITH_LIBTORCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DVIGIL_BUILD_TESTS=ON -DVIGIL_TEST_SUITES="$sanitized_suites"
stage "tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build-sanitize" --output-on-failure --no-tests=error -j "$jobs" ||
  failed "ctest under ASan + UBSan (build-sanitize/)" "$(ctest_failed "$root/build-sanitize")"
check_suites_ran "$root/build-sanitize" ${sanitized_suites//;/ }

stage "fuzzing (short; scripts/fuzz.sh --seconds 3600 for a long run)"
"$root/scripts/fuzz.sh" --seconds 10 || failed "fuzzing (a harness crashed: see its row above)"

if [ ${#failures[@]} -gt 0 ]; then
  echo "== what failed:"
  printf '  %s\n' "${failures[@]}"
fi
stage "done: exit status $status"
exit $status
