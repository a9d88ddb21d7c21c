#!/usr/bin/env bash
# On the GPU machine: SZx A/B of two builds in one call. .gpu/bins.tgz holds
# bench_szx-{base,new,...} (VARIANTS) (and optionally ksz_tests-new, ksz-cuda, bench_lorenzo-$VARIANT);
# each case runs base, new, base, new so that both see the same instance.
#   TESTS=1 LORENZO=1 NCU=1 ROUNDS=2 CASES="rel1e-3 abs5e-3 f64" bash perf/szx_ab.sh
# (RESIDENT=1: bench_szx --resident, the device stages back to back too, for binaries that take it)
# (NCU_KERNEL=decode_kernel NCU_SKIP=1: the decoder's launch instead of the compressor's; NCU also reports the
# ALU pipe's instructions and busy share beside issue's: the compressor is bound by both, perf/NOTES.md round 24)
set -u
# Details under /tmp/szx-ab (emptied first: one call may run this twice), $RES.tgz of them to $OUT.
FINAL=${OUT:-/tmp}; OUT=/tmp/szx-ab; rm -rf "$OUT"; mkdir -p "$OUT"
. perf/gpu_setup.sh
D=${DIMS:-512,512,512}
if [ "${TESTS:-0}" = 1 ] && [ -x .gpu/ksz_tests-new ]; then
  echo "=== CUDA tests (new) ${GTEST_FILTER:-all}"
  timeout ${TEST_TIMEOUT:-300} .gpu/ksz_tests-new --gtest_brief=1 ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} >"$OUT/tests_new.txt" 2>&1
  echo "rc $?"; tail -4 "$OUT/tests_new.txt"; grep "FAILED  \]" "$OUT/tests_new.txt" | head
fi
args_of() {
  case $1 in
    rel1e-3) echo "--dims $D --rel 1e-3" ;; rel1e-4) echo "--dims $D --rel 1e-4" ;; rel1e-2) echo "--dims $D --rel 1e-2" ;;
    abs5e-3) echo "--dims $D --abs 5e-3" ;; abs1e-5) echo "--dims $D --abs 1e-5" ;;
    f64) echo "--dims 512,512,256 --dtype f64 --rel 1e-3" ;; f64abs) echo "--dims 512,512,256 --dtype f64 --abs 1e-3" ;;
    f64rel1e-4) echo "--dims 512,512,256 --dtype f64 --rel 1e-4" ;; f64b256) echo "--dims 512,512,256 --dtype f64 --rel 1e-3 --block 256" ;;
    f64smooth) echo "--dims 512,512,256 --dtype f64 --rel 1e-3 --kind smooth" ;;
    b256) echo "--dims $D --rel 1e-3 --block 256" ;; b512) echo "--dims $D --rel 1e-3 --block 512" ;;
    smooth) echo "--dims $D --rel 1e-3 --kind smooth" ;;
  esac
}
summary() {
  grep -E "COMPRESS kernels|DECOMPRESS kernels|^ratio|back to back" "$1" | sed 's/  */ /g; s/(median of [0-9]*)//' |
    tr '\n' ' '
  echo
}
for c in ${CASES:-rel1e-3 abs5e-3}; do
  for round in $(seq 1 ${ROUNDS:-2}); do
    for b in ${VARIANTS:-base new}; do
      .gpu/bench_szx-$b $(args_of $c) --reps ${REPS:-7} --backend cuda ${RESIDENT:+--resident} --json "$OUT/${c}_${b}_$round.json" >"$OUT/${c}_${b}_$round.txt" 2>&1
      printf "%-8s %-4s %d: " $c $b $round; summary "$OUT/${c}_${b}_$round.txt"
    done
  done
done
if [ "${LORENZO:-0}" = 1 ]; then
  for b in ${VARIANTS:-base new} ${VARIANTS:-base new}; do
    printf "lorenzo 1e-4 %-4s: " $b
    .gpu/bench_lorenzo-$b --dims $D --rel 1e-4 --reps 5 --backend cuda 2>&1 | grep -E "COMPRESS kernels|DECOMPRESS kernels" | sed 's/  */ /g' | tr '\n' ' '; echo
  done
fi
if [ "${NCU:-0}" = 1 ]; then
  for c in ${NCU_CASES:-rel1e-3}; do
    for b in ${VARIANTS:-base new}; do
      ncu --clock-control none -k regex:${NCU_KERNEL:-compress_kernel} -s ${NCU_SKIP:-2} -c 1 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__average_warp_latency_per_inst_issued.ratio,sm__inst_executed_pipe_alu.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active --csv \
        .gpu/bench_szx-$b $(args_of $c) --reps 1 --backend cuda >"$OUT/ncu_${c}_$b.csv" 2>/dev/null
      printf "ncu %-8s %-6s: " $c $b; grep -E 'gpu__time|inst_executed|warp_latency|pipe_alu|issue_active' "$OUT/ncu_${c}_$b.csv" | awk -F'","' '{printf "%s %s; ", $(NF-2), $NF}'; echo
    done
  done
fi
cd "$OUT" && tar -czf "$FINAL/${RES:-res}.tgz" *.json *.txt *.csv 2>/dev/null; ls "$OUT" | wc -l
