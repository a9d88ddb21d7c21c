#!/usr/bin/env bash
# Build Kokkos 3.4.1 + Kokkos Kernels 3.4.1 (from Debian's trilinos source
# package) into a cache prefix outside the repository and print that prefix.
#
#   cmake/bootstrap_deps.sh openmp   # OpenMP + Serial (CPU builds)
#   cmake/bootstrap_deps.sh cuda     # CUDA + Serial (GPU builds), CUDA 13 patches applied
#
# The prefix name contains a hash of this script and of the patch set, so a
# change to either rebuilds; an existing complete prefix is reused as is.
# Cache root: $KSZ_DEPS_CACHE, else $XDG_CACHE_HOME/ksz, else ~/.cache/ksz.
set -euo pipefail
backend=${1:?usage: bootstrap_deps.sh openmp|cuda}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KSZ_DEPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ksz}
jobs=${KSZ_BUILD_JOBS:-$(nproc)}
log() { echo "[ksz-deps] $*" >&2; }

case "$backend" in
  openmp) patches=() ;;
  cuda)   patches=("$here"/patches/kokkos-3.4.1-cuda13-*.patch) ;;
  *) echo "unknown backend '$backend' (openmp|cuda)" >&2; exit 2 ;;
esac

stamp=$( (cat "${BASH_SOURCE[0]}" "${patches[@]}"; echo "${KSZ_CUDA_ARCH:-HOPPER90}") 2>/dev/null | sha256sum | cut -c1-12)
prefix="$cache/kokkos-3.4.1-$backend-$stamp"
if [ -f "$prefix/.complete" ]; then echo "$prefix"; exit 0; fi

# One bootstrap at a time per cache (CI and a developer may share it).
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -f "$prefix/.complete" ]; then echo "$prefix"; exit 0; fi

src="$cache/src/trilinos-src"
if [ ! -d "$src/packages/kokkos" ]; then
  log "fetching Debian's trilinos source package"
  rm -rf "$cache/src"
  "$here/fetch_trilinos_source.sh" "$cache/src" >&2
fi

work="$cache/build-$backend-$stamp"
rm -rf "$work" "$prefix"
mkdir -p "$work"
cp -r "$src/packages/kokkos" "$work/kokkos"
cp -r "$src/packages/kokkos-kernels" "$work/kokkos-kernels"
for p in "${patches[@]}"; do
  log "applying $(basename "$p")"
  patch -d "$work/kokkos" -p1 --forward --quiet <"$p"
done

common=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DCMAKE_INSTALL_PREFIX="$prefix"
        -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
case "$backend" in
  openmp)
    kokkos_opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON -DCMAKE_CXX_COMPILER="${CXX:-g++}") ;;
  cuda)
    # HOPPER90 (H100/H200) is taught to Kokkos 3.4 by the patch set; set
    # KSZ_CUDA_ARCH=AMPERE80 (or another Kokkos arch name) for other GPUs. The
    # relaxed arch check also lets older-major code run on newer devices via PTX.
    kokkos_opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON
                 -DKokkos_ENABLE_CUDA_CONSTEXPR=ON "-DKokkos_ARCH_${KSZ_CUDA_ARCH:-HOPPER90}=ON"
                 -DCMAKE_CXX_COMPILER="$work/kokkos/bin/nvcc_wrapper") ;;
esac

log "building Kokkos ($backend) in $work ($jobs jobs)"
cmake -S "$work/kokkos" -B "$work/kokkos-build" "${common[@]}" "${kokkos_opts[@]}" >"$work/kokkos-configure.log" 2>&1 \
  || { tail -40 "$work/kokkos-configure.log" >&2; exit 1; }
cmake --build "$work/kokkos-build" -j "$jobs" >"$work/kokkos-build.log" 2>&1 \
  || { tail -60 "$work/kokkos-build.log" >&2; exit 1; }
cmake --install "$work/kokkos-build" >/dev/null
# Users of the installed CUDA Kokkos compile through its nvcc_wrapper; keep the patched one.
log "building Kokkos Kernels (no ETI)"
kk_cxx=()
[ "$backend" = cuda ] && kk_cxx=(-DCMAKE_CXX_COMPILER="$prefix/bin/nvcc_wrapper")
cmake -S "$work/kokkos-kernels" -B "$work/kk-build" "${common[@]}" "${kk_cxx[@]}" -DKokkos_ROOT="$prefix" \
  -DKokkosKernels_ADD_DEFAULT_ETI=OFF -DKokkosKernels_ENABLE_TESTS=OFF -DKokkosKernels_ENABLE_EXAMPLES=OFF \
  -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF \
  -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_LAYOUTLEFT=OFF \
  -DKokkosKernels_INST_LAYOUTRIGHT=OFF \
  >"$work/kk-configure.log" 2>&1 || { tail -40 "$work/kk-configure.log" >&2; exit 1; }
cmake --build "$work/kk-build" -j "$jobs" >"$work/kk-build.log" 2>&1 || { tail -60 "$work/kk-build.log" >&2; exit 1; }
cmake --install "$work/kk-build" >/dev/null
rm -rf "$work"
touch "$prefix/.complete"
log "done: $prefix"
echo "$prefix"
