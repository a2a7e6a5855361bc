#!/usr/bin/env bash
# The main job: installs what is missing, builds and installs Vigil into the project's environment
# (pip, scripts/python-envs.sh), then trains a small PyTorch model with a real
# pathology (vanishing gradients in a deep sigmoid network, examples/pytorch_training/) captured by
# vigil.pytorch.Hook, while `vigil evaluate` follows the trial live with the matching built-in rules
# (examples/jobs/vanishing_gradient_job.json). Prints each rule's status, the steps where it fired
# and its evidence, then the trial's summary.
set -euo pipefail
# Built plugins must not be writable by other users, or the loader refuses them (docs/reliability.md).
umask 022
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
# The project's environment .venv, with Vigil installed by pip (scripts/python-envs.sh).
"$root/scripts/python-envs.sh"
python="$root/.venv/bin/python"
vigil="$root/.venv/bin/vigil"
trial="$root/build/example-trial"
status="$root/build/example-status.json"
rm -rf "$trial" "$status"
mkdir -p "$trial"

echo "== training, captured by vigil.pytorch.Hook, with vigil evaluate following the trial"
"$vigil" evaluate --trial "$trial" --job "$root/examples/jobs/vanishing_gradient_job.json" \
  --status-file "$status" --idle-timeout 300 &
evaluator=$!
OMP_NUM_THREADS=1 "$python" "$root/examples/pytorch_training/train_vanishing_gradients.py" "$trial"
wait "$evaluator"

echo
echo "== verdicts ($status)"
"$python" "$root/examples/jobs/print_statuses.py" "$status"
echo
echo "== the trial"
"$vigil" inspect "$trial"
