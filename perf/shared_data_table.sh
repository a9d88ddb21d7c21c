#!/usr/bin/env bash
# Ratio, PSNR and max error for every field in ../shared/data at REL 1e-2,
# 1e-3, 1e-4, as a Markdown table. Bytes are identical on every backend, so
# any build gives the same figures.   perf/shared_data_table.sh [ksz binary] [extra ksz args]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ksz=${1:-$root/build-openmp/ksz}
shift || true
data=$root/../shared/data
fields=$("$root/perf/shared_data_fields.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| field | dims | REL | ratio | PSNR dB | max abs err | abs bound |"
echo "|---|---|---|---|---|---|---|"
echo "$fields" | while IFS=$'\t' read -r path dtype dims d; do
  for e in 1e-2 1e-3 1e-4; do
    out=$("$ksz" compress -i "$data/$path" -o "$tmp/x.ksz" -t "$dtype" -d "$d" -m rel -e "$e" --report "$@")
    ratio=$(echo "$out" | sed -n 's/^ratio \([0-9.]*\).*/\1/p')
    psnr=$(echo "$out" | sed -n 's/^PSNR \([0-9.inf]*\) dB.*/\1/p')
    maxe=$(echo "$out" | sed -n 's/.*max abs error \([^ ]*\) (bound \([^)]*\)).*/\1/p')
    bnd=$(echo "$out" | sed -n 's/.*max abs error \([^ ]*\) (bound \([^)]*\)).*/\2/p')
    echo "$out" | grep -q "respected on every element: yes" || { echo "BOUND VIOLATED: $path $e" >&2; exit 1; }
    echo "| $path | $dims | $e | $ratio | $psnr | $maxe | $bnd |"
  done
done
