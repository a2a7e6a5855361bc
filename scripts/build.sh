#!/usr/bin/env bash
# Configures and builds Vigil into a build folder: scripts/build.sh [BUILD_DIR] [extra cmake args...]
# (Release by default; extra arguments override.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
# ccache (scripts/install-deps.sh) keyed on paths relative to the checkout, so that a fresh clone in
# another folder (CI) and every build folder hit the same cache: a rebuild compiles only what changed.
launcher=()
if command -v ccache >/dev/null 2>&1 && [ "${VIGIL_CCACHE:-1}" != 0 ]; then
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
# One compile more than there are cores: a core is not left idle while a job reads or links.
cmake --build "$build" -j "$(( $(nproc) + 1 ))"
