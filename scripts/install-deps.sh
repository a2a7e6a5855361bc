#!/usr/bin/env bash
# Installs the Debian packages Vigil builds and tests with, and the S3 test server's npm packages.
# Idempotent: does nothing when they are all present, and runs `apt-get update` at most once otherwise.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  ccache                                 # scripts/build.sh: rebuilds (CI's fresh clone too) compile only what changed
  libboost-dev libboost-filesystem-dev   # Boost.DLL (plugin loading)
  pybind11-dev python3-dev               # the Python module
  libeigen3-dev libfmt-dev nlohmann-json3-dev libdlpack-dev
  libgtest-dev libbenchmark-dev
  python3-numpy python3-pytest
  python3-torch                          # vigil.pytorch (capture), its tests and the main job's training run
  libtorch-dev                           # vigil::torch::Hook (hooks/libtorch) and its example
  python3-xgboost python3-pandas         # vigil.xgboost (capture) and its tests; trees_to_dataframe needs pandas
  libcurl4-openssl-dev                   # the S3 client (host/storage/s3_client.cpp): HTTP(S) with OpenSSL
  zlib1g-dev                             # vigil train's model.tar.gz and output.tar.gz (host/jobs/output_archive.cpp)
  nodejs                                 # the S3 test server (tests/support/s3_test_server.py runs s3rver, an npm package)
  tmux                                   # tests/cli/test_training_jobs.py: vigil attach driven on a terminal (send-keys, capture-pane)
  util-linux                             # setpriv: the remote-debug tests connect as another user
  buildah file                           # scripts/build-image.sh (the evaluator's OCI image, no daemon) and tests/cli/test_image.py
  chromium                               # the ProfilerReport page's browser test (tests/support/check_html_in_browser.py: headless render + screenshot)
  # scripts/fuzz.sh: libFuzzer + ASan/UBSan runtimes and llvm-symbolizer for readable reports. clang 19,
  # not 14: libstdc++ 12 offers std::expected only to compilers with __cpp_concepts >= 202002L.
  clang-19 libclang-rt-19-dev llvm-19
)

root="$(cd "$(dirname "$0")/.." && pwd)"
# npm only installs s3rver (below): wanted only while s3rver is missing, and only when no npm is
# there already (a Node.js that bundles its own npm conflicts with Debian's npm package).
s3rver="$root/tests/support/s3rver"
if [ ! -f "$s3rver/node_modules/s3rver/package.json" ] && ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The S3 test server's npm packages, at the versions its package-lock.json pins.
if [ ! -f "$s3rver/node_modules/s3rver/package.json" ]; then
  echo "install-deps: installing s3rver into $s3rver/node_modules"
  npm ci --prefix "$s3rver" --no-audit --no-fund >/dev/null
fi
