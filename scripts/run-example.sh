#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds, writes an example trial
# with Vigil's writer, then runs the evaluator over it with the example job
# (examples/jobs/example_job.json) and prints each rule's DebugRuleEvaluationStatus.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build" -DVIGIL_BUILD_TESTS=OFF
trial="$root/build/example-trial"
rm -rf "$trial"
"$root/build/bin/write_example_trial" "$trial"
"$root/build/bin/vigil" inspect "$trial"
echo
"$root/build/bin/vigil" evaluate --trial "$trial" --job "$root/examples/jobs/example_job.json" \
  --plugins "$root/build/examples/plugins" --status-file "$root/build/example-status.json"
echo
echo "status file: $root/build/example-status.json"
