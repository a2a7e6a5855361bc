# Sourced by scripts/build.sh and scripts/python-envs.sh: puts ccache (scripts/install-deps.sh) in front
# of the compilers for CMake builds, keyed on paths relative to the checkout, so that a fresh clone in
# another folder (CI) and every build folder at the same depth hit the same cache: a rebuild compiles
# only what changed. Sets ccache_cmake_args for a cmake command line, and the environment variables
# CMake reads when nothing is given on its command line (pip's builds through scikit-build-core).
# VIGIL_CCACHE=0 turns it off.
ccache_cmake_args=()
if command -v ccache >/dev/null 2>&1 && [ "${VIGIL_CCACHE:-1}" != 0 ]; then
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  ccache_cmake_args=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
