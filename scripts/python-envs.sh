#!/usr/bin/env bash
# Makes the Python environments the tests run beside Debian's /usr/bin/python3 (torch 1.13, the last
# torch smdebug supported), idempotently: an environment whose requirements have not changed since it
# was filled is left as it is (a stamp file holds them).
#
#   .venv-torch2   torch 2.13 (the CPU wheel on this machine's disk: pip takes it, a plain `torch` would
#                  download a CUDA build) and numpy < 2 (Debian's pybind11 2.10 builds the module, which
#                  predates numpy 2's ABI). No pandas, no xgboost: importing vigil must not need them.
#   .venv-smdebug  the real smdebug 1.0.34, the reference reader and hook of the interop tests, over
#                  Debian's python3 and its site packages (torch 1.13, numpy 1.24, pandas 1.5: smdebug
#                  needs numpy < 2 and pandas < 2.3), with the modules it imports without declaring them.
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

make_env .venv-torch2 "" "torch==2.13.0" "numpy<2"
make_env .venv-smdebug "--system-site-packages" "smdebug==1.0.34" "numpy<2" "pandas<2.3" requests psutil boto3
