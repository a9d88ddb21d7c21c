#!/usr/bin/env bash
# The fields of ../shared/data (its MANIFEST.tsv), one a line, tab-separated:
# path, dtype, dims as the manifest gives them (slowest first) and as ksz takes
# them (fastest first, comma-separated). Exits 1 where the folder is absent.
#   perf/shared_data_fields.sh | while IFS=$'\t' read -r path dtype dims d; do ...; done
set -euo pipefail
data=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/../shared/data
[ -f "$data/MANIFEST.tsv" ] || { echo "no $data/MANIFEST.tsv" >&2; exit 1; }
tail -n +2 "$data/MANIFEST.tsv" | while IFS=$'\t' read -r path bytes dtype dims rest; do
  printf '%s\t%s\t%s\t%s\n' "$path" "$dtype" "$dims" "$(echo "$dims" | tr 'x' '\n' | tac | paste -sd, -)"
done
