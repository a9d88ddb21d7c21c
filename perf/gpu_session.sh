#!/usr/bin/env bash
# Everything one GPU session runs, in one call: device facts, the CUDA test
# suite, the main job at 512^3, benchmarks (CUDA, OpenMP on the host cores),
# and CUDA-vs-OpenMP byte equality on a 512^3 field. Binaries come prebuilt in
# .gpu/ (see README: "Running on a GPU machine"); results go to $OUT.
set -u
R=$PWD
OUT=${OUT:-/tmp/ksz-out}
mkdir -p "$OUT"
# Tests find the CLI and golden files by the absolute paths of the build machine.
[ -e /work/main ] || { mkdir -p /work && ln -s "$R" /work/main; }
mkdir -p build-cuda build-openmp
cp .gpu/ksz-cuda build-cuda/ksz
cp .gpu/ksz-omp build-openmp/ksz
export LD_LIBRARY_PATH=$R/.gpu:${LD_LIBRARY_PATH:-}
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-cores}
DIMS=${DIMS:-512,512,512}
step() { echo; echo "=== $* ==="; }

step device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
nproc
cuobjdump --list-elf .gpu/ksz-cuda 2>/dev/null | head -3

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  step "CUDA test suite"
  .gpu/ksz_tests-cuda --gtest_brief=1 2>&1 | tail -25 | tee "$OUT/tests_cuda.txt"
fi

step "main job on the GPU"
build-cuda/ksz demo -d "$DIMS" 2>&1 | tee "$OUT/demo_cuda.txt"

for rel in 1e-4 1e-3; do
  step "bench CUDA $DIMS REL $rel"
  .gpu/bench_lorenzo-cuda --dims "$DIMS" --rel $rel --reps 5 --backend cuda --json "$OUT/bench_cuda_$rel.json"
done
for t in ${OMP_BENCH_THREADS:-16 1}; do
  step "bench OpenMP $t threads $DIMS REL 1e-4"
  OMP_NUM_THREADS=$t .gpu/bench_lorenzo-omp --dims "$DIMS" --rel 1e-4 --reps $([ $t = 1 ] && echo 1 || echo 3) \
    --backend openmp --json "$OUT/bench_omp${t}_1e-4.json"
done

step "CUDA bytes == OpenMP bytes on $DIMS"
build-cuda/ksz gen -o /tmp/f.f32 -t f32 -d "$DIMS"
build-cuda/ksz compress -i /tmp/f.f32 -o /tmp/f_cuda.ksz -t f32 -d "$DIMS" -e 1e-4
OMP_NUM_THREADS=16 build-openmp/ksz compress -i /tmp/f.f32 -o /tmp/f_omp.ksz -t f32 -d "$DIMS" -e 1e-4
cmp /tmp/f_cuda.ksz /tmp/f_omp.ksz && echo "IDENTICAL BYTES ($(stat -c %s /tmp/f_cuda.ksz) bytes)"
build-openmp/ksz decompress -i /tmp/f_cuda.ksz -o /tmp/g_omp.f32
build-cuda/ksz decompress -i /tmp/f_omp.ksz -o /tmp/g_cuda.f32
cmp /tmp/g_omp.f32 /tmp/g_cuda.f32 && echo "IDENTICAL DECOMPRESSED BYTES"
