#!/usr/bin/env bash
# On the GPU machine (after perf/gpu_setup.sh): SZx streams written by the CUDA
# and the OpenMP CLI from the same files must be the same bytes, and each
# decodes the other's to the same values. Cases: "dtype mode bound block".
set -u
D=${DIMS:-512,512,512}; D64=${DIMS64:-512,512,256}
build-cuda/ksz gen -o /tmp/x.f32 -t f32 -d "$D" >/dev/null
build-cuda/ksz gen -o /tmp/x.f64 -t f64 -d "$D64" >/dev/null
bad=0
while read -r t m e b; do
  [ -n "$t" ] || continue
  d=$([ $t = f32 ] && echo "$D" || echo "$D64")
  a=(compress -i /tmp/x.$t -t $t -d "$d" --predictor szx --block $b --mode $m -e $e)
  rm -f /tmp/c.ksz /tmp/o.ksz /tmp/c_omp.out /tmp/o_cuda.out
  if ! { build-cuda/ksz "${a[@]}" -o /tmp/c.ksz >/dev/null && OMP_NUM_THREADS=16 build-openmp/ksz "${a[@]}" -o /tmp/o.ksz >/dev/null &&
         build-openmp/ksz decompress -i /tmp/c.ksz -o /tmp/c_omp.out >/dev/null &&
         build-cuda/ksz decompress -i /tmp/o.ksz -o /tmp/o_cuda.out >/dev/null; }; then
    echo "FAILED $t $m $e block $b (a CLI call exited non-zero)"; bad=1
  elif cmp -s /tmp/c.ksz /tmp/o.ksz && cmp -s /tmp/c_omp.out /tmp/o_cuda.out; then
    echo "same  $t $m $e block $b: stream md5 $(md5sum </tmp/c.ksz | head -c 8), $(stat -c %s /tmp/c.ksz) bytes"
  else echo "DIFFER $t $m $e block $b"; bad=1; fi
done <<CASES
${SZX_CROSS_CASES:-f32 rel 1e-3 128
f32 rel 1e-4 128
f32 abs 1e-5 128
f32 rel 1e-3 256
f32 rel 1e-3 512
f64 rel 1e-3 128
f64 abs 1e-7 128}
CASES
exit $bad
