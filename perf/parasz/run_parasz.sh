#!/usr/bin/env bash
# The issue-4 figures in one command (host cores; the dual-quantization PW_REL
# ratios on --backend, default the build's fastest):
#   perf/parasz/run_parasz.sh [build dir, default build-openmp] [backend for dual] > parasz.txt
# 1. speedup and per-stage times at 1/2/4/8/16 threads (each run with
#    OMP_NUM_THREADS=T so the Kokkos host stages use T threads as well) on a
#    512x512x256 generated f32 field, PW_REL 1e-3; and ABS-mode speedup;
# 2. checkWidth x progress control (spin / condvar) at 16 threads;
# 3. PW_REL 1e-2/1e-3/1e-4 ratios, classic and dual, on every field in ../shared/data.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-openmp}
backend=${2:-default}
bench=$build/perf/bench_parasz
export OMP_PROC_BIND=false
# In one process (Kokkos host stages at 16 threads, pipeline workers 1..16):
# the speedup column is the pipelined predict+quantize stage's scaling.
OMP_NUM_THREADS=16 "$bench" --dims 512,512,256 --mode pwrel -e 1e-3 --threads 1,2,4,8,16 --reps 3 2>/dev/null
# One process per T (every stage at T threads): speedup = total(T=1) / total(T).
for mode in pwrel rel; do
  for t in 1 2 4 8 16; do
    OMP_NUM_THREADS=$t "$bench" --dims 512,512,256 --mode $mode -e 1e-3 --threads $t --reps 3 2>/dev/null |
      sed -n '1p;/^ *[0-9]/p'
  done
done
OMP_NUM_THREADS=16 "$bench" --dims 512,512,256 --mode pwrel -e 1e-3 --threads 16 --reps 3 \
  --widths 24,48,96,192,384,768,1536,6144 2>/dev/null | sed -n '/^2\./,$p'
echo "3. PW_REL ratios on ../shared/data"
"$root/perf/shared_data_pwrel.sh" "$build" "$backend"
