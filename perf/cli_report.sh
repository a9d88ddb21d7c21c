#!/usr/bin/env bash
# On the GPU machine (after perf/gpu_setup.sh): the CLI's per-stage report,
# end to end, for builds .gpu/ksz-$v (VARIANTS), each run a fresh process on a
# generated $DIMS f32 file, rounds alternating the builds so that all see the
# same instance. One line a run: the stages as `--report` prints them (the
# compression, then its check's decompression), the CLI's wall time, and the
# stream's md5 (equal across builds where the format is unchanged).
#   VARIANTS="base new" ROUNDS=2 bash perf/cli_report.sh
set -u
D=${DIMS:-512,512,512}
read -r -a vs <<<"${VARIANTS:-base new}"
".gpu/ksz-${vs[0]}" gen -o /tmp/cli_report.f32 -t f32 -d "$D" >/dev/null || exit 1
for round in $(seq 1 "${ROUNDS:-2}"); do
  for p in ${PREDICTORS:-szx lorenzo}; do
    e=$([ "$p" = szx ] && echo 1e-3 || echo 1e-4)
    for v in "${vs[@]}"; do
      rm -f /tmp/cli_report.ksz
      t0=$(date +%s%N)
      out=$(".gpu/ksz-$v" compress -i /tmp/cli_report.f32 -t f32 -d "$D" --predictor "$p" -e "$e" -o /tmp/cli_report.ksz \
        --report 2>&1)
      rc=$?
      wall=$((($(date +%s%N) - t0) / 1000000))
      stages=$(echo "$out" | awk '/ ms /{n=$0; sub(/ +[0-9.]+ ms.*/, "", n); sub(/^ +/, "", n);
                                  for (i = 1; i < NF; ++i) if ($(i + 1) == "ms") printf "%s %s; ", n, $i}')
      printf "%-8s %-5s %d: rc %d wall %d ms md5 %s | %s\n" "$p" "$v" "$round" $rc $wall \
        "$(md5sum </tmp/cli_report.ksz 2>/dev/null | head -c 8)" "$stages"
    done
  done
done
