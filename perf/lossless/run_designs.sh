#!/usr/bin/env bash
# Lossless-pass designs (bench_lossless) on real Huffman output: generated
# 256^3 f32 fields (smooth, turbulent) and every field of ../shared/data, at
# REL 1e-2, 1e-3, 1e-4, Lorenzo and interp. One thread for every case, and the
# generated fields again on 2 threads. zstd -3 (Debian's CLI, CPU only) on the
# same bitstreams for reference, when installed. Rows go to $out/rows.tsv, the
# Markdown tables to stdout.
#   perf/lossless/run_designs.sh [build dir] [out dir]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-openmp}
out=${2:-$(mktemp -d)}
bench=$build/perf/bench_lossless
ksz=$build/ksz
data=$root/../shared/data
mkdir -p "$out"
rows=$out/rows.tsv
zrows=$out/zstd.tsv
: >"$rows"
: >"$zrows"
export OMP_PROC_BIND=false
run() {  # threads label input type dims predictor rel
  local t=$1 label=$2 input=$3 type=$4 dims=$5 p=$6 e=$7
  OMP_NUM_THREADS=$t "$bench" --backend openmp --reps 5 --tsv "$rows" --label "$label" --dump "$out/seg.bin" \
    --input "$input" --type "$type" --dims "$dims" --predictor "$p" --rel "$e" >/dev/null 2>&1 ||
    { echo "bench failed: $label $p $e" >&2; exit 1; }
  if [ "$t" = 1 ] && command -v zstd >/dev/null; then
    echo -e "$label\t$p\t$e\t$(stat -c %s "$out/seg.bin")\t$(zstd -3 -c -q "$out/seg.bin" | wc -c)" >>"$zrows"
  fi
}
for kind in smooth turbulent; do
  f=$out/$kind.f32
  [ -f "$f" ] || "$ksz" gen -o "$f" -t f32 -d 256,256,256 --kind "$kind" >/dev/null
  for p in lorenzo interp; do
    for e in 1e-2 1e-3 1e-4; do
      for t in 1 2; do run $t "gen-$kind-256^3" "$f" f32 256,256,256 $p $e; done
    done
  done
done
if [ -f "$data/MANIFEST.tsv" ]; then
  tail -n +2 "$data/MANIFEST.tsv" | while IFS=$'\t' read -r path bytes dtype dims rest; do
    d=$(echo "$dims" | tr 'x' '\n' | tac | paste -sd, -)
    for p in lorenzo interp; do
      for e in 1e-2 1e-3 1e-4; do run 1 "$path" "$data/$path" "$dtype" "$d" $p $e; done
    done
  done
fi
"$root/perf/lossless/designs_table.sh" "$rows" "$zrows"
