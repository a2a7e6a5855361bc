#!/usr/bin/env bash
# Makes the project's Python environments from Debian's /usr/bin/python3 and installs Vigil into them
# as a user would (`pip install`), idempotently: an environment whose requirements have not changed
# since it was filled keeps its packages (a stamp file holds them); Vigil itself is rebuilt from the
# checkout each time (scikit-build-core's build folder and ccache make that a matter of seconds when
# nothing changed).
#
#   .venv          the project's environment: torch 2.13 (the CPU wheel on this machine's disk: pip
#                  takes it, a plain `torch` would download a CUDA build), numpy, pandas, xgboost,
#                  pytest, TensorBoard (its reader checks Vigil's event files), mypy (checks the package's
#                  types), transformers, accelerate (its Trainer needs it) and lightning (the trainer
#                  integrations' tests: torch stays pinned
#                  in the same pip command, so neither pulls another torch), kubernetes-validate (the
#                  Kubernetes API's JSON schemas, shipped in the package: tests/cli/test_kubernetes_manifests.py
#                  validates deploy/kubernetes/ offline),
#                  dask[distributed] and pyarrow (vigil.fleet, the `fleet` extra), and Vigil. The main job and the Python tests run here.
#   .venv-torch1   Debian's torch 1.13 (the last torch smdebug supported), numpy, pandas and xgboost
#                  through --system-site-packages, and the same Vigil wheel: the hook suites run here
#                  a second time.
#   .venv-smdebug  the real smdebug 1.0.34, the reference reader and hook of the interop tests, over
#                  Debian's site packages (smdebug needs numpy < 2 and pandas < 2.3), with the modules
#                  it imports without declaring them. No Vigil: tests put Vigil's package beside it.
#
# Usage: scripts/python-envs.sh [ROOT]   (ROOT defaults to the checkout)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"

make_env() {  # NAME VENV_FLAGS REQUIREMENT...
  local name="$1" flags="$2" env="$root/$1"
  shift 2
  local want="python=$(/usr/bin/python3 -c 'import sys; print(sys.version)' | head -1) flags=$flags $*"
  if [ -x "$env/bin/python" ] && [ "$(cat "$env/.vigil-requirements" 2>/dev/null)" = "$want" ]; then
    return
  fi
  echo "python-envs: making $name ($*)"
  rm -rf "$env"
  # shellcheck disable=SC2086 # flags is a list of options or empty
  /usr/bin/python3 -m venv $flags "$env"
  "$env/bin/python" -m pip install -q --no-input "$@"
  printf '%s' "$want" >"$env/.vigil-requirements"
}

# The build requirements (pyproject.toml's build-system.requires) live in .venv, and the wheel is built
# without build isolation: the same pybind11 path each time, so ccache hits.
make_env .venv "" "torch==2.13.0" numpy pandas xgboost pytest tensorboard mypy "scikit-build-core>=1.0" "pybind11>=2.12" \
  transformers accelerate lightning kubernetes-validate "dask[distributed]" pyarrow
make_env .venv-torch1 "--system-site-packages" "pytest>=7"
make_env .venv-smdebug "--system-site-packages" "smdebug==1.0.34" "numpy<2" "pandas<2.3" requests psutil boto3

echo "python-envs: building Vigil's wheel (pip wheel, scikit-build-core)"
# shellcheck source=scripts/ccache-env.sh
source "$root/scripts/ccache-env.sh"
wheels="$root/build-wheels"
rm -rf "$wheels"
# The compilers CMake picks by itself (scripts/build.sh), not Python's configured x86_64-linux-gnu-gcc,
# so that this build and build/ share ccache entries.
CC="${CC:-cc}" CXX="${CXX:-c++}" "$root/.venv/bin/python" -m pip wheel --no-input --no-deps --no-build-isolation \
  -w "$wheels" "$root"
wheel=("$wheels"/vigil-*.whl)
for env in .venv .venv-torch1; do
  "$root/$env/bin/python" -m pip install -q --no-input --no-deps --force-reinstall "${wheel[0]}"
done
echo "python-envs: installed ${wheel[0]##*/} into .venv and .venv-torch1"
