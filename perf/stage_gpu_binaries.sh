#!/usr/bin/env bash
# Copies the CUDA and OpenMP builds' binaries into .gpu/ (ignored by git),
# the folder perf/gpu_session.sh, perf/gpu_quick.sh and perf/run.sh run from on
# the GPU machine (run.sh needs bench_lorenzo-{cuda,omp} and libgomp). Stripped,
# and only what those run: the device tool carries at most 64 MiB.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
rm -rf .gpu && mkdir -p .gpu
for b in cuda openmp; do
  suffix=$([ $b = cuda ] && echo cuda || echo omp)
  cp build-$b/ksz .gpu/ksz-$suffix
  [ $b = cuda ] && cp build-$b/tests/ksz_tests .gpu/ksz_tests-$suffix
  for f in build-$b/perf/bench_*; do
    [ -x "$f" ] || continue
    # The ParaSZ pipeline runs on host threads in every build: only its OpenMP binary travels.
    [ $b = cuda ] && [ "$(basename "$f")" = bench_parasz ] && continue
    cp "$f" ".gpu/$(basename "$f")-$suffix"
  done
done
strip .gpu/*
cp "$(g++ -print-file-name=libgomp.so.1)" .gpu/
# One compressed archive travels; perf/gpu_session.sh unpacks it.
tar -C .gpu -czf /tmp/ksz-gpu-bins.tgz . && rm -rf .gpu && mkdir .gpu && mv /tmp/ksz-gpu-bins.tgz .gpu/bins.tgz
du -sh .gpu
