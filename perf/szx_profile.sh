#!/usr/bin/env bash
# On the GPU machine: one launch of an SZx kernel (KERNEL, default the
# compressor; SKIP launches first) under Nsight Compute's source counters, into
# $OUT: the details page and the per-SASS-line table (executed instructions and
# stall samples a line) as CSV. The binary is .gpu/bench_szx-$TAG, as
# perf/szx_ab.sh names them.  TAG=base KERNEL=decode_kernel SKIP=1 bash perf/szx_profile.sh
set -u
TAG=${TAG:-base}
OUT=${OUT:-/tmp/szx-prof}; mkdir -p "$OUT"
B=.gpu/bench_szx-$TAG
K=${KERNEL:-compress_kernel}
ncu --clock-control none -k "regex:$K" -s ${SKIP:-2} -c 1 --section SourceCounters --section WarpStateStats \
  --section LaunchStats --section SpeedOfLight -o /tmp/prof_$TAG "$B" --dims ${DIMS:-512,512,512} --rel ${REL:-1e-3} \
  --reps 1 --backend cuda >/tmp/prof_$TAG.log 2>&1 || tail -20 /tmp/prof_$TAG.log
ncu -i /tmp/prof_$TAG.ncu-rep --page details --csv >"$OUT/details_$TAG.csv" 2>&1
ncu -i /tmp/prof_$TAG.ncu-rep --page source --csv --print-source sass >"$OUT/sass_$TAG.csv" 2>&1
gzip -f "$OUT/sass_$TAG.csv"
grep -E '"(Duration|Executed Instructions|Registers Per Thread|Achieved Occupancy|Issue Slots Busy|DRAM Throughput)"' \
  "$OUT/details_$TAG.csv" | cut -d, -f5-
