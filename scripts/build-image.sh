#!/usr/bin/env bash
# Builds the evaluator's OCI image without a Docker daemon (docs/image.md):
#   scripts/build-image.sh [--output FILE] [--build-dir DIR]
# FILE: the OCI archive (default <repo>/build-image/vigil-evaluator.oci.tar), reference
# vigil-evaluator:VERSION. DIR: the CMake build folder to install from (default
# <repo>/build-image/build, configured and built here without tests).
#
# The image is `scratch` plus exactly what the evaluator runs: the runtime install (bin/vigil, the
# built-in plugins, the Python rule plugin and the vigil package) under /opt/vigil, the ELF files'
# shared-library closure (ldd), and the Python the rule plugin embeds (its stdlib without tests and
# GUI modules, numpy), each at the path it has here, so no interpreter or loader path changes.
# Reproducible: every file's time is SOURCE_DATE_EPOCH (default: the last commit's time), files go
# in sorted, the image's dates are that time, so the same inputs give the same digest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
output="$root/build-image/vigil-evaluator.oci.tar"
build="$root/build-image/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --output) output="$(realpath -m "$2")"; shift 2 ;;
    --build-dir) build="$(realpath -m "$2")"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unexpected argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
command -v buildah >/dev/null || { echo "build-image: buildah is missing (scripts/install-deps.sh installs it)" >&2; exit 2; }
# buildah mount needs root, or a user namespace where this user is root.
if [ "$(id -u)" -ne 0 ] && [ -z "${BUILDAH_ISOLATION_UNSHARED:-}" ]; then
  exec env BUILDAH_ISOLATION_UNSHARED=1 buildah unshare "$0" --output "$output" --build-dir "$build"
fi

header="$root/abi/include/vigil/version.h"
abi_field() { sed -n "s/^#define VIGIL_ABI_$1 \([0-9]*\).*/\1/p" "$header"; }
abi="$(abi_field MAJOR).$(abi_field MINOR)"
version="$abi.$(abi_field PATCH)"
# The project's address: VIGIL_IMAGE_SOURCE, else this clone's origin (without any user:password@).
source_url="${VIGIL_IMAGE_SOURCE:-$(git -C "$root" remote get-url origin 2>/dev/null | sed 's|//[^/@]*@|//|' || true)}"
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}"
work="$root/build-image"
stage="$work/rootfs"
mkdir -p "$work" "$(dirname "$output")"

# 1. The runtime install tree: the vigil command, its plugins, the vigil package the Python rule
# plugin imports (components vigil_runtime and vigil_python).
if [ ! -f "$build/CMakeCache.txt" ] || [ "$build" = "$work/build" ]; then
  nice -n 10 bash "$root/scripts/build.sh" "$build" -DVIGIL_BUILD_TESTS=OFF -DVIGIL_BUILD_BENCH=OFF \
    -DVIGIL_WITH_LIBTORCH=OFF -DVIGIL_BUILD_PYTHON=ON
fi
rm -rf "$stage"
mkdir -p "$stage"
for component in vigil_runtime vigil_python; do
  cmake --install "$build" --component "$component" --prefix "$stage/opt/vigil" >/dev/null
done
[ -x "$stage/opt/vigil/bin/vigil" ] || { echo "build-image: $build installed no bin/vigil" >&2; exit 1; }

# 2. The Python the rule plugin starts as (the program it was built for), its stdlib and numpy.
python="$(sed -n 's/^VIGIL_PYTHON_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")"
python="$(realpath "${python:-/usr/bin/python3}")"
read -r stdlib dynload numpy < <("$python" -c '
import numpy, os, sysconfig
print(sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib") + "/lib-dynload", os.path.dirname(numpy.__file__))')
copy() {  # copy() PATH...: each path (dereferenced) to the same path in the image, without tests and GUI modules
  tar -C / -chf - --exclude=__pycache__ --exclude='*/test' --exclude='*/tests' --exclude='*/idlelib' \
    --exclude='*/tkinter' --exclude='*/turtledemo' --exclude='*/ensurepip' --exclude='*/lib2to3' --exclude='*/config-3*' "${@#/}" | tar -C "$stage" -xf -
}
copy "$python" /usr/bin/python3 "$stdlib" "$numpy"
[ -d "$numpy.libs" ] && copy "$numpy.libs"
# Debian's numpy finds its BLAS through the alternatives' links; ldd below resolves them.

# 3. Every ELF file's shared libraries (ldd closure), at the paths the loader looks them up by.
mapfile -t elves < <(find "$stage" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print0 |
  xargs -0 file -N --mime-type | sed -n 's/: *application\/x-\(pie-executable\|sharedlib\|executable\)$//p')
ldd_out="$(for f in "${elves[@]}"; do ldd "$f" 2>/dev/null || true; done)"
if grep -q "not found" <<<"$ldd_out"; then
  echo "build-image: unresolved libraries:" >&2; grep "not found" <<<"$ldd_out" | sort -u >&2; exit 1
fi
mapfile -t libs < <(sed -n 's/.*=> \(\/[^ ]*\) (.*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' <<<"$ldd_out" | sort -u)
copy "${libs[@]}"
# S3 over HTTPS verifies against the system's CA bundle.
[ -f /etc/ssl/certs/ca-certificates.crt ] && copy /etc/ssl/certs/ca-certificates.crt

# 4. The user, the mount points, fixed times.
mkdir -p "$stage/etc" "$stage/tmp" "$stage/home/vigil" "$stage/opt/vigil/"{job,plugins,output,trial}
printf 'root:x:0:0:root:/root:/sbin/nologin\nvigil:x:10001:10001:vigil:/home/vigil:/sbin/nologin\n' >"$stage/etc/passwd"
printf 'root:x:0:\nvigil:x:10001:\n' >"$stage/etc/group"
chmod 1777 "$stage/tmp"
chown -R 0:0 "$stage"
chown 10001:10001 "$stage/home/vigil" "$stage/opt/vigil/output"
find "$stage" -exec touch -h -d "@$epoch" {} +

# 5. The image: scratch + the tree, in a storage of its own (vfs, chroot isolation: no daemon).
storage=(--storage-driver vfs --root "$work/storage" --runroot "$work/run")
ctr="$(buildah "${storage[@]}" from scratch)"
trap 'buildah "${storage[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt="$(buildah "${storage[@]}" mount "$ctr")"
(cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
  tar --null --no-recursion -T - -cf - --numeric-owner) | tar -C "$mnt" -xpf - --numeric-owner
buildah "${storage[@]}" umount "$ctr" >/dev/null
buildah "${storage[@]}" config \
  --user 10001:10001 --workingdir /home/vigil \
  --env PATH=/opt/vigil/bin:/usr/bin:/bin --env VIGIL_PLUGIN_PATH=/opt/vigil/plugins \
  --entrypoint '["vigil"]' --cmd '["evaluate", "--help"]' \
  --label org.opencontainers.image.title=vigil-evaluator \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.source=${source_url:-vigil}" \
  --label "dev.vigil.abi-version=$abi" \
  "$ctr"
rm -f "$output"
buildah "${storage[@]}" commit --quiet --format oci --timestamp "$epoch" --omit-history "$ctr" \
  "oci-archive:$output:vigil-evaluator:$version" >/dev/null
echo "build-image: $output (vigil-evaluator:$version, $(du -h "$output" | cut -f1))"
