#!/usr/bin/env bash
# Configures and builds Vigil into a build folder: scripts/build.sh [BUILD_DIR] [extra cmake args...]
# (Release by default; extra arguments override.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
# shellcheck source=scripts/ccache-env.sh
source "$root/scripts/ccache-env.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${ccache_cmake_args[@]}" "$@" >/dev/null
# One compile more than there are cores: a core is not left idle while a job reads or links.
cmake --build "$build" -j "$(( $(nproc) + 1 ))"
