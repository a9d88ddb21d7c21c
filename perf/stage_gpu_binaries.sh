#!/usr/bin/env bash
# Copies the CUDA and OpenMP builds' binaries into .gpu/ (ignored by git),
# the folder perf/gpu_session.sh runs from on the GPU machine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
rm -rf .gpu && mkdir -p .gpu
for b in cuda openmp; do
  suffix=$([ $b = cuda ] && echo cuda || echo omp)
  cp build-$b/ksz .gpu/ksz-$suffix
  cp build-$b/tests/ksz_tests .gpu/ksz_tests-$suffix
  for f in build-$b/perf/bench_*; do [ -x "$f" ] && cp "$f" ".gpu/$(basename "$f")-$suffix"; done
done
cp "$(g++ -print-file-name=libgomp.so.1)" .gpu/
du -sh .gpu
