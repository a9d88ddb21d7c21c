#!/usr/bin/env bash
# Markdown tables from run_designs.sh's rows:  designs_table.sh rows.tsv [zstd.tsv]
# rows: data, predictor, rel, threads, design, input bytes, stream bytes,
#       bitstream bytes, coded bytes, encode s, decode s
set -euo pipefail
rows=$1
zrows=${2:-/dev/null}
designs="zbe zwe bp32+zbe rle"
echo "### Summary"
echo
echo "Gain = Huffman bitstream bytes / bytes after the pass, summed over a set of cases. MB/s over the bitstream's"
echo "bytes (encode, decode), device-resident, median of 5; generated = the 12 cases on the two 256^3 fields."
echo
echo "| design | gain, all cases | gain, cases where zbe gains >= 5% | 1 thread enc/dec MB/s, generated | 2 threads enc/dec MB/s, generated | 1 thread enc/dec MB/s, all cases |"
echo "|---|---|---|---|---|---|"
for d in $designs; do
  awk -F'\t' -v d="$d" '
    $4 == 1 && $5 == "zbe" { zg[$1 FS $2 FS $3] = $8 / $9 }
    { key = $1 FS $2 FS $3; row[NR] = $0 }
    END {
      for (i = 1; i <= NR; i++) {
        split(row[i], f, FS)
        if (f[5] != d) continue
        key = f[1] FS f[2] FS f[3]
        gen = f[1] ~ /^gen-/
        if (f[4] == 1) {
          ab += f[8]; ac += f[9]; at += f[10]; ad += f[11]
          if (zg[key] >= 1.05) { cb += f[8]; cc += f[9] }
          if (gen) { g1b += f[8]; g1e += f[10]; g1d += f[11] }
        } else if (gen) { g2b += f[8]; g2e += f[10]; g2d += f[11] }
      }
      printf "| %s | %.3f | %.3f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f |\n", d, ab / ac, (cc ? cb / cc : 0),
             g1b / g1e / 1e6, g1b / g1d / 1e6, (g2e ? g2b / g2e / 1e6 : 0), (g2d ? g2b / g2d / 1e6 : 0),
             ab / at / 1e6, ab / ad / 1e6
    }' "$rows"
done
if [ -s "$zrows" ]; then
  awk -F'\t' '{ b += $4; c += $5 } END { printf "| zstd -3 (CLI, reference) | %.3f | | | | |\n", b / c }' "$zrows"
fi
echo
echo "### Every case (1 thread)"
echo
echo "Ratio = whole-stream compression ratio. Gain per design as above; zstd -3 for reference."
echo
echo "| data | predictor | REL | ratio, no pass | zbe gain | zwe gain | bp32+zbe gain | rle gain | zstd -3 gain | ratio with zbe |"
echo "|---|---|---|---|---|---|---|---|---|---|"
awk -F'\t' -v zfile="$zrows" '
  BEGIN { while ((getline line < zfile) > 0) { split(line, z, "\t"); zg[z[1] "\t" z[2] "\t" z[3]] = z[4] / z[5] } }
  $4 == 1 {
    key = $1 "\t" $2 "\t" $3
    if (!(key in seen)) { seen[key] = 1; order[++n] = key; ratio0[key] = $6 / $7 }
    gain[key, $5] = $8 / $9
    if ($5 == "zbe") rz[key] = $6 / ($7 - $8 + $9)
  }
  END {
    for (i = 1; i <= n; i++) {
      k = order[i]
      split(k, f, "\t")
      zs = (k in zg) ? sprintf("%.3f", zg[k]) : "-"
      printf "| %s | %s | %s | %.2f | %.3f | %.3f | %.3f | %.3f | %s | %.2f |\n", f[1], f[2], f[3], ratio0[k],
             gain[k, "zbe"], gain[k, "zwe"], gain[k, "bp32+zbe"], gain[k, "rle"], zs, rz[k]
    }
  }' "$rows"
