#!/usr/bin/env bash
# One entry point for newcomers and CI. Idempotent: dependencies are built
# once into a cache outside the repository (cmake/bootstrap_deps.sh) and reused.
#
#   cmake/dev.sh demo [ksz demo args]  build (OpenMP+Serial) and run the main job
#   cmake/dev.sh test                  build and run every test (OpenMP + Serial)
#   cmake/dev.sh build-cuda            compile the CUDA build (library, CLI, tests, perf)
#   cmake/dev.sh build                 build only (OpenMP+Serial)
#
# Environment: KSZ_BUILD_DIR (default build-openmp / build-cuda in the repo,
# ignored by git), KSZ_DEPS_CACHE (default ~/.cache/ksz), Kokkos_ROOT to use
# your own Kokkos instead of the bootstrap.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmd=${1:-demo}
shift || true
jobs=${KSZ_BUILD_JOBS:-$(nproc)}
log() { echo "[ksz] $*" >&2; }

ensure_packages() {
  local need=()
  for p in cmake g++ make patch libcli11-dev libgtest-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  [ ${#need[@]} -eq 0 ] && return
  log "installing Debian packages: ${need[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null \
    || { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null; }
}

configure_build() {  # $1 backend, $2 build dir, $3... extra cmake args
  local backend=$1 dir=$2
  shift 2
  local kokkos=${Kokkos_ROOT:-}
  if [ -z "$kokkos" ]; then
    log "Kokkos ($backend): building or reusing the cached bootstrap"
    kokkos=$("$root/cmake/bootstrap_deps.sh" "$backend")
  fi
  local extra=()
  if [ "$backend" = cuda ] && [ -x "$kokkos/bin/nvcc_wrapper" ]; then
    extra+=(-DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper")
  fi
  cmake -S "$root" -B "$dir" -DKokkos_ROOT="$kokkos" -DCMAKE_BUILD_TYPE=Release "${extra[@]}" "$@" >"$dir.configure.log" 2>&1 \
    || { tail -30 "$dir.configure.log" >&2; exit 1; }
  log "building in $dir ($jobs jobs)"
  cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1 || { grep -E "error|Error" -A5 "$dir.build.log" | head -60 >&2; exit 1; }
}

cpu_dir=${KSZ_BUILD_DIR:-$root/build-openmp}
export OMP_PROC_BIND=${OMP_PROC_BIND:-false}
case "$cmd" in
  build)
    ensure_packages
    configure_build openmp "$cpu_dir" ;;
  demo)
    ensure_packages
    configure_build openmp "$cpu_dir"
    exec "$cpu_dir/ksz" demo "$@" ;;
  test)
    ensure_packages
    "$root/cmake/lint.sh"
    configure_build openmp "$cpu_dir"
    cd "$cpu_dir"
    exec ctest --output-on-failure -j "$jobs" "$@" ;;
  build-cuda)
    ensure_packages
    command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "nvcc not found" >&2; exit 1; }
    export PATH=$PATH:/usr/local/cuda/bin
    configure_build cuda "${KSZ_BUILD_DIR:-$root/build-cuda}" "$@" ;;
  *)
    echo "usage: cmake/dev.sh demo|test|build|build-cuda" >&2; exit 2 ;;
esac
