#!/usr/bin/env bash
# Everything one GPU session runs, in one call: device facts, the CUDA test
# suite, the main job at 512^3, benchmarks (CUDA, OpenMP on the host cores),
# and CUDA-vs-OpenMP byte equality on a 512^3 field; PART=4: the benchmark
# harness (perf/run.sh cuda, then openmp, into $OUT/bench: results.csv,
# table.md, *.svg). Binaries come prebuilt in .gpu/ (see README: "Running on a
# GPU machine"); results go to $OUT.
set -u
OUT=${OUT:-/tmp/ksz-out}
mkdir -p "$OUT"
. perf/gpu_setup.sh
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-cores}
DIMS=${DIMS:-512,512,512}
step() { echo; echo "=== $* ==="; }

step device
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
nproc
cuobjdump --list-elf .gpu/ksz-cuda 2>/dev/null | head -3

PART=${PART:-all}
part() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }

if part 1; then
  if [ "${SKIP_TESTS:-0}" != 1 ]; then
    step "CUDA test suite"
    .gpu/ksz_tests-cuda --gtest_brief=1 2>&1 | tail -25 | tee "$OUT/tests_cuda.txt"
  fi

  step "main job on the GPU"
  build-cuda/ksz demo -d "$DIMS" 2>&1 | tee "$OUT/demo_cuda.txt"

  for rel in 1e-4 1e-3; do
    step "bench CUDA $DIMS REL $rel (specialized)"
    .gpu/bench_lorenzo-cuda --dims "$DIMS" --rel $rel --reps 5 --backend cuda --json "$OUT/bench_cuda_$rel.json"
    step "bench CUDA $DIMS REL $rel (portable only)"
    KSZ_PORTABLE_ONLY=1 .gpu/bench_lorenzo-cuda --dims "$DIMS" --rel $rel --reps 5 --backend cuda \
      --json "$OUT/bench_cuda_portable_$rel.json"
  done

  step "CUDA bytes == OpenMP bytes on $DIMS (Lorenzo, SZx)"
  DIMS=$DIMS bash perf/cross_backends.sh 2>&1 | tee "$OUT/cross_backends.txt"
fi

if part 2; then
  step "bench SZx CUDA $DIMS REL 1e-3"
  .gpu/bench_szx-cuda --dims "$DIMS" --rel 1e-3 --block 128 --reps 5 --backend cuda --json "$OUT/szx_cuda_1e-3.json"
  step "bench interp CUDA $DIMS REL 1e-3"
  .gpu/bench_interp-cuda --dims "$DIMS" --rel 1e-3 --reps 3 --backend cuda --json "$OUT/interp_cuda_1e-3.json"
  step "bench metrics CUDA $DIMS"
  .gpu/bench_metrics-cuda --dims "$DIMS" --reps 5 --backend cuda --json "$OUT/metrics_cuda.json"
  step "bench metrics OpenMP 16 threads $DIMS"
  OMP_NUM_THREADS=16 .gpu/bench_metrics-omp --dims "$DIMS" --reps 2 --backend openmp --json "$OUT/metrics_omp16.json"
  step "bench SZx OpenMP 16/1 threads $DIMS REL 1e-3"
  OMP_NUM_THREADS=16 .gpu/bench_szx-omp --dims "$DIMS" --rel 1e-3 --reps 3 --backend openmp --json "$OUT/szx_omp16.json"
  OMP_NUM_THREADS=1 .gpu/bench_szx-omp --dims "$DIMS" --rel 1e-3 --reps 1 --backend openmp --json "$OUT/szx_omp1.json"
fi

if part 3; then
  for t in ${OMP_BENCH_THREADS:-16 1}; do
    step "bench OpenMP $t threads $DIMS REL 1e-4"
    OMP_NUM_THREADS=$t .gpu/bench_lorenzo-omp --dims "$DIMS" --rel 1e-4 --reps $([ $t = 1 ] && echo 1 || echo 3) \
      --backend openmp --json "$OUT/bench_omp${t}_1e-4.json"
  done
  step "ParaSZ classic pipeline and PW_REL on the host cores"
  mkdir -p build-openmp/perf && cp .gpu/bench_parasz-omp build-openmp/perf/bench_parasz
  perf/parasz/run_parasz.sh build-openmp 2>&1 | tee "$OUT/parasz.txt"
fi

# Only when asked for (PART=4), not in PART=all: about 4 minutes on its own.
if [ "$PART" = 4 ]; then
  step "harness: CUDA (specialized, then KSZ_PORTABLE_ONLY=1) and OpenMP on $(nproc) host cores"
  perf/run.sh cuda "$OUT/bench"
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)} perf/run.sh openmp "$OUT/bench"
  step "summary: 3D turbulent REL 1e-3 (all rows: $OUT/bench/table.md, results.csv; plots: $OUT/bench/*.svg)"
  python3 perf/plot.py "$OUT/bench/results.csv" --chart table --where rank=3 --where data=turbulent \
    --where bound=1e-3 -o - | tee "$OUT/bench/summary_3d_turbulent_1e-3.md"
fi
