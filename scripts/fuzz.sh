#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) with clang + ASan + UBSan into build-fuzz/, seeds their
# corpora from the shared fixtures and runs each for a while:
#
#   scripts/fuzz.sh [--seconds N] [TARGET...]
#
# N seconds per target (default 60); TARGETs default to all six. Prints executions, corpus size (the
# inputs libFuzzer keeps for coverage, and all inputs on disk) and crashes per target, and exits
# non-zero when any target crashed (crash, leak, sanitizer report, timeout, out-of-memory).
# Reproduce a crash with: build-fuzz/fuzz/TARGET build-fuzz/crashes/TARGET/FILE
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-fuzz"
fixtures="$root/../shared/fixtures"
all_targets=(tfrecord_fuzzer event_proto_fuzzer index_json_fuzzer collections_json_fuzzer job_config_fuzzer
             param_values_fuzzer shard_layout_fuzzer elf_search_path_fuzzer s3_listing_fuzzer control_protocol_fuzzer)

seconds=60
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="${2:?--seconds needs a number}"; shift 2 ;;
    --seconds=*) seconds="${1#--seconds=}"; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --seconds wants a positive integer" >&2; exit 2; }
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target $t (one of: ${all_targets[*]})" >&2; exit 2; }
done
[ -d "$fixtures" ] || { echo "fuzz.sh: no shared fixtures at $fixtures" >&2; exit 2; }

"$root/scripts/install-deps.sh"

# Only the harnesses and the parser sources they test are built, never the rest of the project.
# shellcheck source=scripts/ccache-env.sh
source "$root/scripts/ccache-env.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 "${ccache_cmake_args[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DVIGIL_BUILD_FUZZERS=ON -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_PYTHON=OFF >/dev/null
cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"

/usr/bin/python3 "$root/fuzz/make_seeds.py" "$fixtures" "$root/examples/jobs" "$build/corpus"

# The largest input per target: a little above the largest real file of its kind.
max_len() {
  case "$1" in
    tfrecord_fuzzer) echo 65536 ;;         # event files of the fixtures: up to 29 KB
    event_proto_fuzzer) echo 32768 ;;      # one record payload
    index_json_fuzzer) echo 16384 ;;       # up to 5 KB
    collections_json_fuzzer) echo 16384 ;; # up to 8 KB
    job_config_fuzzer) echo 8192 ;;
    param_values_fuzzer) echo 1024 ;;      # SageMaker caps a RuleParameters value at 256 characters
    shard_layout_fuzzer) echo 8192 ;;
    elf_search_path_fuzzer) echo 16384 ;;  # headers, a dynamic section and its strings
    s3_listing_fuzzer) echo 65536 ;;       # a page of 1000 keys is ~350 KB; 64 KiB reaches every branch
    control_protocol_fuzzer) echo 69632 ;; # a frame of up to 64 KiB and its header, and a little of the next
  esac
}

# Member names and JSON tokens help the JSON harnesses past the parsers' first checks.
dictionary() {
  case "$1" in
    index_json_fuzzer|collections_json_fuzzer|job_config_fuzzer|shard_layout_fuzzer) echo "-dict=$root/fuzz/json.dict" ;;
  esac
}

symbolizer=/usr/lib/llvm-19/bin/llvm-symbolizer
[ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

status=0
report=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  artifacts="$build/crashes/$t"
  log="$build/logs/$t.log"
  mkdir -p "$artifacts" "$(dirname "$log")"
  stamp="$(mktemp)"
  echo "== $t: ${seconds}s"
  # -malloc_limit_mb: no single allocation may come near the limit for inputs of at most max_len bytes.
  # Only the corpus and artifact folders are written (the harnesses themselves write nothing).
  rc=0
  "$build/fuzz/$t" "$corpus" $(dictionary "$t") -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  # libFuzzer's working corpus (inputs that add coverage) and all inputs kept on disk (seeds included).
  active="$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)"
  corpus_files="$(find "$corpus" -type f | wc -l)"
  crashes="$(find "$artifacts" -type f -newer "$stamp" ! -name 'slow-unit-*' | wc -l)"
  rm -f "$stamp"
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi  # e.g. a crash while loading the corpus
  if [ "$crashes" -gt 0 ]; then
    status=1
    echo "fuzz.sh: $t failed (exit $rc); log: $log"
    grep -E "^==[0-9]+==ERROR|runtime error|invariant violated|^SUMMARY|Test unit written to" "$log" | head -20 || true
  fi
  report+=("$(printf '%-26s %12s %8s %10s %8s' "$t" "${execs:-?}" "${active:-?}" "$corpus_files" "$crashes")")
done

echo
printf '%-26s %12s %8s %10s %8s\n' target executions corpus on-disk crashes
printf '%s\n' "${report[@]}"
exit $status
