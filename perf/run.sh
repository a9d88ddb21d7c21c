#!/usr/bin/env bash
# The benchmark harness on one machine, one command: the Lorenzo pipeline
# (bench_lorenzo) over the issue's axes, every row appended to one CSV, then a
# Markdown table and SVG plots of that CSV.
#
#   perf/run.sh cuda|openmp|serial OUTDIR
#
# Writes OUTDIR/results.csv (one row per stage and total, run metadata in every
# row; appended, so cuda then openmp into one OUTDIR gives one table of both),
# OUTDIR/table.md (one row per configuration: device, data, dims, dtype, REL,
# ratio, PSNR, max error, compress/decompress GB/s, specialized or portable,
# peak memory), OUTDIR/throughput.svg (GB/s vs input size), OUTDIR/stages.svg,
# OUTDIR/memory.svg, OUTDIR/json/*.json (one per process) and OUTDIR/log.txt.
#
# Axes: sizes 64^3..512^3 (1024^3 on CUDA when the device has 6x its 4 GiB
# free), each as 3D, 2D and 1D of the same element count; REL 1e-2/1e-3/1e-4;
# data generated smooth and turbulent, and every field of ../shared/data when
# present (MANIFEST.tsv gives dtype and dims). On CUDA every generated
# configuration runs twice: CUDA specializations on, then off (KSZ_PORTABLE_ONLY=1).
#
# Environment: QUICK=1 (64^3 and 128^3, 3 reps: about a minute on 2 cores),
# SIZES="64 128", RELS=1e-3,1e-4, KINDS=turbulent, REPS=3, PORTABLE=0 (skip the
# portable pass), REAL=0 (skip shared data), DATA=dir, BENCH=path/to/bench_lorenzo.
# Binaries: BENCH, else build-{cuda,openmp}/perf/bench_lorenzo, else the GPU
# machine's .gpu/bench_lorenzo-{cuda,omp} (perf/stage_gpu_binaries.sh; its
# bins.tgz is unpacked here). Needs bash and python3 (standard library) only.
# Exit status: 0, or 3 if any bound was violated, 1 if a run failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -eq 2 ] || { sed -n '2,28p' "$0" >&2; exit 2; }
backend=$1
out=$2
case "$backend" in
  cuda) suffix=cuda build=build-cuda ;;
  openmp | serial) suffix=omp build=build-openmp ;;
  *) echo "backend: cuda, openmp or serial" >&2; exit 2 ;;
esac
mkdir -p "$out/json"
out=$(cd "$out" && pwd)
bench=${BENCH:-}
if [ -z "$bench" ]; then
  if [ -x "$root/$build/perf/bench_lorenzo" ]; then
    bench=$root/$build/perf/bench_lorenzo
  else
    [ -f "$root/.gpu/bins.tgz" ] && tar -C "$root/.gpu" -xzf "$root/.gpu/bins.tgz" && rm "$root/.gpu/bins.tgz"
    bench=$root/.gpu/bench_lorenzo-$suffix
    export LD_LIBRARY_PATH=$root/.gpu:${LD_LIBRARY_PATH:-}  # libgomp travels with the binaries
  fi
fi
[ -x "$bench" ] || { echo "no $bench: build it (cmake/dev.sh build / build-cuda), stage .gpu/ or set BENCH" >&2; exit 1; }
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-cores}

if [ "${QUICK:-0}" = 1 ]; then
  sizes=${SIZES:-"64 128"} reps=${REPS:-3}
elif [ "$backend" = cuda ]; then
  sizes=${SIZES:-"64 128 256 512 1024"} reps=${REPS:-3}
else
  sizes=${SIZES:-"64 128 256"} reps=${REPS:-3}  # host cores: ~0.5 GB/s, 512^3 would take minutes
fi
rels=${RELS:-1e-2,1e-3,1e-4}
kinds=${KINDS:-smooth,turbulent}
csv=$out/results.csv
log=$out/log.txt
status=0
note() { echo "[run] $*" | tee -a "$log" >&2; }

# One process per size: its shapes, kinds and bounds loop inside.
run() {  # $1 tag for file names, rest: bench arguments
  local tag=$1
  shift
  "$bench" --backend "$backend" --reps "$reps" --csv "$csv" --json "$out/json/${backend}_$tag.json" "$@" >>"$log" 2>&1
  local rc=$?
  if [ $rc -eq 3 ]; then
    note "BOUND VIOLATED: $tag $*"; status=3
  elif [ $rc -ne 0 ]; then
    note "FAILED (exit $rc): $tag $*"; [ $status -eq 0 ] && status=1
  fi
}

# The machine's metadata; a bench that cannot start here (no GPU, wrong backend) stops the run.
info=$("$bench" --backend "$backend" --info 2>&1) || { echo "$info" | tail -5 >&2; note "$bench --backend $backend cannot start"; exit 1; }
free=$(echo "$info" | sed -n 's/.*"free_bytes":\([0-9]*\).*/\1/p')
note "$(date -u +%FT%TZ) $bench on $backend; ${free:-?} bytes free; sizes $sizes; REL $rels; $kinds; reps $reps"

# Shapes of n = s^3 elements: s,s,s / a,b with a*b = n / n (s a power of 2).
shapes() {
  local s=$1 k=0 n=$(($1 * $1 * $1))
  while [ $((1 << k)) -lt "$s" ]; do k=$((k + 1)); done
  if [ $((1 << k)) -eq "$s" ]; then
    local hi=$(((3 * k + 1) / 2)) lo=$((3 * k / 2))
    echo "$s,$s,$s/$((1 << hi)),$((1 << lo))/$n"
  else
    echo "$s,$s,$s/$((s * s)),$s/$n"
  fi
}

passes=(default)  # on CUDA: specializations on
[ "$backend" = cuda ] && [ "${PORTABLE:-1}" = 1 ] && passes+=(portable)
for pass in "${passes[@]}"; do
  for s in $sizes; do
    bytes=$((s * s * s * 4))
    # The bench holds the field and its reconstruction; compression ~2.5x more (see peak memory).
    if [ -n "$free" ] && [ $((bytes * 6)) -gt "$free" ]; then
      note "skip $s^3: needs ~$((bytes * 6 >> 20)) MiB, $((free >> 20)) MiB free"
      continue
    fi
    dims=$(shapes "$s") r=$rels
    [ "$s" -ge 1024 ] && dims=$s,$s,$s r=1e-3  # one shape, one bound: ~10 s per configuration
    note "$s^3 ($dims)$([ $pass = portable ] && echo ", KSZ_PORTABLE_ONLY=1")"
    if [ $pass = portable ]; then
      KSZ_PORTABLE_ONLY=1 run "portable_$s" --dims "$dims" --kind "$kinds" --rel "$r"
    else
      run "$s" --dims "$dims" --kind "$kinds" --rel "$r"
    fi
  done
done

data=${DATA:-}
for d in "$root/../shared/data" "$root/shared/data"; do
  [ -z "$data" ] && [ -f "$d/MANIFEST.tsv" ] && data=$d
done
if [ "${REAL:-1}" = 1 ] && [ -n "$data" ] && [ -f "$data/MANIFEST.tsv" ]; then
  note "real fields from $data"
  while IFS=$'\t' read -r path _ dtype d _; do
    dims=$(echo "$d" | tr 'x' '\n' | tac | paste -sd, -)  # manifest: slowest first; ksz: fastest first
    run "real_$(echo "$path" | tr '/.' '__')" --input "$data/$path" --dtype "$dtype" --dims "$dims" \
      --name "$path" --rel "$rels" </dev/null
  done < <(tail -n +2 "$data/MANIFEST.tsv")
else
  note "no shared data (set DATA=dir with MANIFEST.tsv)"
fi

[ -s "$csv" ] || { note "no results in $csv"; exit 1; }
plot=$root/perf/plot.py
python3 "$plot" "$csv" --chart table -o "$out/table.md" 2>>"$log" || status=1
python3 "$plot" "$csv" --chart sizes -o "$out/throughput.svg" 2>>"$log" || status=1
python3 "$plot" "$csv" -o "$out/stages.svg" 2>>"$log" || status=1
python3 "$plot" "$csv" --chart memory -o "$out/memory.svg" 2>>"$log" || status=1
note "done: $(($(grep -c . "$csv") - 1)) CSV rows; $out/{results.csv,table.md,throughput.svg,stages.svg,memory.svg}; exit $status"
exit $status
