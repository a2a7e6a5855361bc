#!/usr/bin/env bash
# The main job on the bundled example: installs what is missing, builds, writes an example trial
# with Vigil's writer, then inspects it with `vigil inspect`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build" -DVIGIL_BUILD_TESTS=OFF
trial="$root/build/example-trial"
rm -rf "$trial"
"$root/build/bin/write_example_trial" "$trial"
"$root/build/bin/vigil" inspect "$trial"
