#!/usr/bin/env bash
# The main job: installs what is missing, builds, then trains a small PyTorch model with a real
# pathology (vanishing gradients in a deep sigmoid network, examples/pytorch_training/) captured by
# vigil.pytorch.Hook, while `vigil evaluate` follows the trial live with the matching built-in rules
# (examples/jobs/vanishing_gradient_job.json). Prints each rule's status, the steps where it fired
# and its evidence, then the trial's summary.
set -euo pipefail
# Built plugins must not be writable by other users, or the loader refuses them (docs/reliability.md).
umask 022
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build" -DVIGIL_BUILD_TESTS=OFF -DVIGIL_WITH_LIBTORCH=OFF
vigil="$root/build/bin/vigil"
trial="$root/build/example-trial"
status="$root/build/example-status.json"
rm -rf "$trial" "$status"
mkdir -p "$trial"

echo "== training, captured by vigil.pytorch.Hook, with vigil evaluate following the trial"
"$vigil" evaluate --trial "$trial" --job "$root/examples/jobs/vanishing_gradient_job.json" \
  --status-file "$status" --idle-timeout 300 &
evaluator=$!
PYTHONPATH="$root/build/python" OMP_NUM_THREADS=1 \
  /usr/bin/python3 "$root/examples/pytorch_training/train_vanishing_gradients.py" "$trial"
wait "$evaluator"

echo
echo "== verdicts ($status)"
/usr/bin/python3 "$root/examples/jobs/print_statuses.py" "$status"
echo
echo "== the trial"
"$vigil" inspect "$trial"
