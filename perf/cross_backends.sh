#!/usr/bin/env bash
# On the GPU machine (after perf/gpu_setup.sh; perf/gpu_session.sh runs it):
# streams written by the CUDA and the OpenMP CLI from the same files must be
# the same bytes, and each decodes the other's to the same values. A case is
# "predictor dtype mode bound block" (block: SZx's, "-" for the others), on a
# generated field of $DIMS (f32) or $DIMS64 (f64); CROSS_CASES replaces the list.
set -u
D=${DIMS:-512,512,512}; D64=${DIMS64:-512,512,256}
build-cuda/ksz gen -o /tmp/x.f32 -t f32 -d "$D" >/dev/null
build-cuda/ksz gen -o /tmp/x.f64 -t f64 -d "$D64" >/dev/null
bad=0
while read -r p t m e b; do
  [ -n "$p" ] || continue
  d=$([ $t = f32 ] && echo "$D" || echo "$D64")
  a=(compress -i /tmp/x.$t -t $t -d "$d" --predictor $p --mode $m -e $e)
  [ "$b" = - ] || a+=(--block $b)
  what="$p $t $m $e"; [ "$b" = - ] || what+=" block $b"
  rm -f /tmp/c.ksz /tmp/o.ksz /tmp/c_omp.out /tmp/o_cuda.out
  if ! { build-cuda/ksz "${a[@]}" -o /tmp/c.ksz >/dev/null && OMP_NUM_THREADS=16 build-openmp/ksz "${a[@]}" -o /tmp/o.ksz >/dev/null &&
         build-openmp/ksz decompress -i /tmp/c.ksz -o /tmp/c_omp.out >/dev/null &&
         build-cuda/ksz decompress -i /tmp/o.ksz -o /tmp/o_cuda.out >/dev/null; }; then
    echo "FAILED $what (a CLI call exited non-zero)"; bad=1
  elif cmp -s /tmp/c.ksz /tmp/o.ksz && cmp -s /tmp/c_omp.out /tmp/o_cuda.out; then
    echo "same  $what: stream md5 $(md5sum </tmp/c.ksz | head -c 8), $(stat -c %s /tmp/c.ksz) bytes"
  else echo "DIFFER $what"; bad=1; fi
done <<CASES
${CROSS_CASES:-lorenzo f32 rel 1e-4 -
szx f32 rel 1e-3 128
szx f32 rel 1e-4 128
szx f32 abs 1e-5 128
szx f32 rel 1e-3 256
szx f32 rel 1e-3 512
szx f64 rel 1e-3 128
szx f64 abs 1e-7 128}
CASES
exit $bad
