#!/usr/bin/env bash
# A predictor (szx: block 128; interp) beside Lorenzo+Huffman on every field of
# ../shared/data at REL 1e-2, 1e-3, 1e-4: ratio, PSNR, its max error and the
# bound, as a Markdown table headed by a summary (ratio and PSNR against
# Lorenzo's, by bound). Both columns are measured by the same build in the same
# run (perf/shared_data_table.sh twice); bytes are identical on every backend,
# so any build gives the same figures.
#   perf/shared_data_vs_lorenzo.sh szx [ksz binary] > perf/results/shared_data_szx.md
#   perf/shared_data_vs_lorenzo.sh interp [ksz binary] > perf/results/shared_data_interp_vs_lorenzo.md
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pred=${1:?predictor: szx or interp}
ksz=${2:-$root/build-openmp/ksz}
case $pred in
  szx) name="SZx"; title="SZx (block 128)"; segs="; SZx's, segment 21's run counts" ;;
  interp) name="interp"; title="Interpolation (G-Interp, auto-tuned)"; segs="" ;;
  *) echo "predictor: szx or interp" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/perf/shared_data_table.sh" "$ksz" --predictor "$pred" >"$tmp/mine.md"
"$root/perf/shared_data_table.sh" "$ksz" >"$tmp/lorenzo.md"
# Rows of both tables, in the same order (one field and bound a row).
paste -d'\t' <(tail -n +3 "$tmp/mine.md") <(tail -n +3 "$tmp/lorenzo.md") | while IFS=$'\t' read -r s l; do
  IFS='|' read -r _ sf sd se sr sp sm sb _ <<<"$s"
  IFS='|' read -r _ lf _ le lr lp _ _ _ <<<"$l"
  [ "$sf" = "$lf" ] && [ "$se" = "$le" ] || { echo "row mismatch: $sf $se / $lf $le" >&2; exit 1; }
  echo "|$sf|$sd|$se|$sr|$lr|$sp|$lp|$sm|$sb|"
done >"$tmp/rows.md"
echo "# $title beside Lorenzo+Huffman on ../shared/data"
echo
echo "Compression ratio and PSNR at REL 1e-2/1e-3/1e-4; bytes are identical on every backend. Both columns from one"
echo "run of \`perf/shared_data_vs_lorenzo.sh $pred\` ($("$ksz" --version 2>/dev/null | head -1 || echo ksz));"
echo "the bound held on every element of every field for both. Streams include every segment the current format"
echo "writes (Huffman streams: format 1.2 sub-chunk lengths and the lossless pass where it shrinks the stream$segs)."
echo
python3 - "$tmp/rows.md" "$name" <<'PY'
import math, statistics, sys
rows = [[c.strip() for c in l.strip().strip("|").split("|")] for l in open(sys.argv[1])]
name = sys.argv[2]
for e in ("1e-2", "1e-3", "1e-4"):
    r = [(float(c[3]), float(c[4])) for c in rows if c[2] == e]
    print(f"- REL {e}: {name}'s ratio is {statistics.geometric_mean([a / b for a, b in r]):.2f}x Lorenzo's (geometric mean of {len(r)} fields)")
ahead = [f"{c[0]} at {c[2]} ({c[3]} against {c[4]})" for c in rows if float(c[3]) > float(c[4])]
print(f"- {name}'s ratio is the larger on {len(ahead)} of {len(rows)}" + (": " + "; ".join(ahead) if 0 < len(ahead) <= 8 else ""))
d = [float(c[5]) - float(c[6]) for c in rows if math.isfinite(float(c[5]) - float(c[6]))]
lower = sorted({c[0] for c in rows if float(c[5]) < float(c[6])})
print(f"- {name}'s PSNR is the higher on {sum(x > 0 for x in d)} of {len(d)} with both finite (median difference "
      f"{statistics.median(d):+.1f} dB); lower on " + (", ".join(lower) if len(lower) <= 8 else f"{len(lower)} fields"))
PY
echo
echo "| field | dims | REL | $name ratio | Lorenzo ratio | $name PSNR dB | Lorenzo PSNR dB | $name max abs err | abs bound |"
echo "|---|---|---|---|---|---|---|---|---|"
cat "$tmp/rows.md"
