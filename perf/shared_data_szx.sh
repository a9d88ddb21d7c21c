#!/usr/bin/env bash
# SZx (block 128) beside Lorenzo+Huffman on every field of ../shared/data at
# REL 1e-2, 1e-3, 1e-4: ratio, PSNR, SZx's max error and the bound, as the
# Markdown table of perf/results/shared_data_szx.md. Both columns are measured
# by the same build in the same run (perf/shared_data_table.sh twice); bytes are
# identical on every backend, so any build gives the same figures. A summary
# (ratio and PSNR against Lorenzo's, by bound) heads the table.
#   perf/shared_data_szx.sh [ksz binary] > perf/results/shared_data_szx.md
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ksz=${1:-$root/build-openmp/ksz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/perf/shared_data_table.sh" "$ksz" --predictor szx >"$tmp/szx.md"
"$root/perf/shared_data_table.sh" "$ksz" >"$tmp/lorenzo.md"
# Rows of both tables, in the same order (one field and bound a row).
paste -d'\t' <(tail -n +3 "$tmp/szx.md") <(tail -n +3 "$tmp/lorenzo.md") | while IFS=$'\t' read -r s l; do
  IFS='|' read -r _ sf sd se sr sp sm sb _ <<<"$s"
  IFS='|' read -r _ lf _ le lr lp _ _ _ <<<"$l"
  [ "$sf" = "$lf" ] && [ "$se" = "$le" ] || { echo "row mismatch: $sf $se / $lf $le" >&2; exit 1; }
  echo "|$sf|$sd|$se|$sr|$lr|$sp|$lp|$sm|$sb|"
done >"$tmp/rows.md"
echo "# SZx (block 128) beside Lorenzo+Huffman on ../shared/data"
echo
echo "Compression ratio and PSNR at REL 1e-2/1e-3/1e-4; bytes are identical on every backend. Both columns from one"
echo "run of \`perf/shared_data_szx.sh\` ($("$ksz" --version 2>/dev/null | head -1 || echo ksz)); the bound held on every"
echo "element of every field for both. Streams include every segment the current format writes (SZx: segment 21's"
echo "run counts; Lorenzo: format 1.2 sub-chunk lengths and the lossless pass where it shrinks the stream)."
echo
python3 - "$tmp/rows.md" <<'PY'
import math, statistics, sys
rows = [[c.strip() for c in l.strip().strip("|").split("|")] for l in open(sys.argv[1])]
for e in ("1e-2", "1e-3", "1e-4"):
    r = [(float(c[3]), float(c[4])) for c in rows if c[2] == e]
    print(f"- REL {e}: SZx's ratio is {statistics.geometric_mean([a / b for a, b in r]):.2f}x Lorenzo's (geometric mean of {len(r)} fields)")
ahead = [f"{c[0]} at {c[2]} ({c[3]} against {c[4]})" for c in rows if float(c[3]) > float(c[4])]
print(f"- SZx's ratio is the larger on {len(ahead)} of {len(rows)}" + (": " + "; ".join(ahead) if ahead else ""))
d = [float(c[5]) - float(c[6]) for c in rows if math.isfinite(float(c[5]) - float(c[6]))]
lower = sorted({c[0] for c in rows if float(c[5]) < float(c[6])})
print(f"- SZx's PSNR is the higher on {sum(x > 0 for x in d)} of {len(d)} with both finite (median difference "
      f"{statistics.median(d):+.1f} dB); lower on {', '.join(lower) or 'none'}")
PY
echo
echo "| field | dims | REL | SZx ratio | Lorenzo ratio | SZx PSNR dB | Lorenzo PSNR dB | SZx max abs err | abs bound |"
echo "|---|---|---|---|---|---|---|---|---|"
cat "$tmp/rows.md"
