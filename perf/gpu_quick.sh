#!/usr/bin/env bash
# A short GPU iteration (run from the repository root on the GPU machine, after
# perf/stage_gpu_binaries.sh here): the CUDA test suite, the Lorenzo benchmark
# specialized and portable-only, and a per-kernel Nsight Compute summary.
# Results are packed into $OUT/res.tgz (the device tool returns few files).
set -u
RES=/tmp/res; mkdir -p $RES
. perf/gpu_setup.sh
DIMS=${DIMS:-512,512,512}
echo "=== CUDA tests"; timeout 300 .gpu/ksz_tests-cuda --gtest_brief=1 ${GTEST_FILTER:+--gtest_filter=$GTEST_FILTER} >$RES/tests.txt 2>&1; tail -5 $RES/tests.txt; grep "FAILED  \]" $RES/tests.txt
for rel in ${RELS:-1e-4 1e-3}; do
  echo "=== bench specialized $rel"; .gpu/bench_lorenzo-cuda --dims $DIMS --rel $rel --reps 5 --backend cuda --json $RES/bench_cuda_$rel.json | tee $RES/bench_cuda_$rel.txt | grep -E "ratio|COMPRESS|DECOMPRESS|  [a-z]"
  echo "=== bench portable $rel"; KSZ_PORTABLE_ONLY=1 .gpu/bench_lorenzo-cuda --dims $DIMS --rel $rel --reps 5 --backend cuda --json $RES/bench_cuda_portable_$rel.json | tee $RES/bench_cuda_portable_$rel.txt | grep -E "kernels"
done
if [ "${NCU:-1}" = 1 ] && command -v ncu >/dev/null; then
  echo "=== ncu"; timeout 240 ncu --clock-control none --section SpeedOfLight --csv .gpu/bench_lorenzo-cuda --dims $DIMS --rel 1e-4 --reps 1 --backend cuda >$RES/ncu.csv 2>$RES/ncu.err
  python3 - $RES/ncu.csv <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')))
agg = collections.OrderedDict()
for r in rows:
    k = r["Kernel Name"][:60]; m = r["Metric Name"]; v = r["Metric Value"].replace(",", "")
    try: v = float(v)
    except ValueError: continue
    agg.setdefault(k, collections.defaultdict(list))[m].append(v)
for k, ms in agg.items():
    d = ms.get("Duration", [0]); dram = ms.get("DRAM Throughput", [0]); mem = ms.get("Memory Throughput", [0]); sm = ms.get("Compute (SM) Throughput", [0])
    print(f"{k:60s} n={len(d):2d} dur(us) med={sorted(d)[len(d)//2]:9.1f} dram%={sorted(dram)[len(dram)//2]:5.1f} mem%={sorted(mem)[len(mem)//2]:5.1f} sm%={sorted(sm)[len(sm)//2]:5.1f}")
PY
fi
tar -C $RES -czf ${OUT:-/tmp}/res.tgz .
