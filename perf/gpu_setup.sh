# Sourced from the repository root on the GPU machine by perf/gpu_session.sh,
# perf/gpu_quick.sh and perf/szx_ab.sh: unpacks .gpu/bins.tgz
# (perf/stage_gpu_binaries.sh, or an A/B's own set), links /work/main (the
# tests find the CLI and golden files by the build machine's absolute paths),
# puts the CLIs that came where the tests look (build-cuda/ksz,
# build-openmp/ksz) and .gpu on the library path (libgomp).
[ -f .gpu/bins.tgz ] && tar -C .gpu -xzf .gpu/bins.tgz && rm .gpu/bins.tgz
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
mkdir -p build-cuda build-openmp
if [ -x .gpu/ksz-cuda ]; then cp .gpu/ksz-cuda build-cuda/ksz; fi
if [ -x .gpu/ksz-omp ]; then cp .gpu/ksz-omp build-openmp/ksz; fi
export LD_LIBRARY_PATH=$PWD/.gpu:${LD_LIBRARY_PATH:-}
