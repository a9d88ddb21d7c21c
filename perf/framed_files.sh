#!/usr/bin/env bash
# Framed files (src/api/frames.hpp) end to end through the CLI, on the GPU
# machine after perf/stage_gpu_binaries.sh (or any .gpu/ with ksz-cuda,
# ksz-omp, time): a generated field written to a file, compressed whole and in
# frames, decompressed; wall time and peak resident memory of each run
# (GNU time: .gpu/time or /usr/bin/time), whether the framed files decode to
# the unframed file's values, and whether OpenMP writes the CUDA framed
# stream's bytes and decodes it to the same values. The file is written just
# before, so it is read from the page cache: this measures ksz, not the disk.
# DIMS (default 1024,1024,1024), FRAMES (MiB, default "0 512 1024"; 0 = whole),
# CASES (default "szx:1e-3 lorenzo:1e-4", REL), W (work folder, default /tmp/fw).
set -u
# (On the GPU machine, source perf/gpu_setup.sh first: it unpacks .gpu/bins.tgz.)
DIMS=${DIMS:-1024,1024,1024}; FRAMES=${FRAMES:-0 512 1024}; CASES=${CASES:-szx:1e-3 lorenzo:1e-4}
W=${W:-/tmp/fw}; K=${K:-.gpu/ksz-cuda}; KO=${KO:-.gpu/ksz-omp}
TM=$( [ -x .gpu/time ] && echo .gpu/time || echo /usr/bin/time )
rm -rf "$W"; mkdir -p "$W"
run() { echo "--- ${*:2}"; $TM -f "wall %e s, max RSS %M KiB" "$@" 2>&1 | grep -v "^ksz: " | tail -3; }
run $K gen -o $W/f.f32 -d $DIMS --kind turbulent
first=${FRAMES%% *}
for c in $CASES; do
  p=${c%%:*}; e=${c##*:}
  for F in $FRAMES; do
    run $K compress -i $W/f.f32 -o $W/c$F.ksz -d $DIMS -m rel -e $e --predictor $p --frame-mb $F
    stat -c "%n %s bytes" $W/c$F.ksz
    run $K decompress -i $W/c$F.ksz -o $W/d$F.f32
    [ $F != $first ] && cmp $W/d$first.f32 $W/d$F.f32 && echo "frames of $F MiB decode as frames of $first ($p)"
  done
  if [ -x "$KO" ]; then
    F=${FRAMES##* }
    run $KO compress -i $W/f.f32 -o $W/o.ksz -d $DIMS -m rel -e $e --predictor $p --frame-mb $F
    cmp $W/c$F.ksz $W/o.ksz && echo "OpenMP writes the CUDA framed stream's bytes ($p, $F MiB)"
    run $KO decompress -i $W/c$F.ksz -o $W/o.f32
    cmp $W/o.f32 $W/d$F.f32 && echo "OpenMP decodes the CUDA framed file to the same values ($p)"
  fi
  rm -f $W/d*.f32 $W/o.*
done
echo "=== --report, frames of ${FRAMES##* } MiB"
$K compress -i $W/f.f32 -o $W/r.ksz -d $DIMS -m rel -e 1e-3 --predictor szx --frame-mb ${FRAMES##* } --report 2>&1 | grep -v "^ksz: "
$K info -i $W/r.ksz
$K decompress -i $W/r.ksz -o $W/r.f32 --report 2>&1 | grep -v "^ksz: "
rm -rf "$W"
