#!/usr/bin/env bash
# Installs the Debian packages Vigil builds and tests with. Idempotent: does nothing when they are
# all present, and runs `apt-get update` at most once otherwise.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libboost-dev libboost-filesystem-dev   # Boost.DLL (plugin loading)
  pybind11-dev python3-dev               # the Python module
  libeigen3-dev libfmt-dev nlohmann-json3-dev libdlpack-dev
  libgtest-dev libbenchmark-dev
  python3-numpy python3-pytest
  protobuf-compiler python3-protobuf     # tests/python/test_tensorboard.py: the independent TensorBoard check
  python3-torch                          # vigil.pytorch (capture), its tests and the main job's training run
  libtorch-dev                           # vigil::torch::Hook (hooks/libtorch) and its example
  python3-xgboost python3-pandas         # vigil.xgboost (capture) and its tests; trees_to_dataframe needs pandas
  chromium                               # the ProfilerReport page's browser test (tests/support/check_html_in_browser.py: headless render + screenshot)
  # scripts/fuzz.sh: libFuzzer + ASan/UBSan runtimes and llvm-symbolizer for readable reports. clang 19,
  # not 14: libstdc++ 12 offers std::expected only to compilers with __cpp_concepts >= 202002L.
  clang-19 libclang-rt-19-dev llvm-19
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
