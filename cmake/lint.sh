#!/usr/bin/env bash
# Source checks the compilers cannot make. Run by cmake/dev.sh test.
#  - Every Kokkos::parallel_reduce over a range or team policy takes a named
#    functor: nvcc's host-device lambda wrapper calls a null pointer when a
#    template holding such a lambda is instantiated in two translation units
#    (seen with CUDA 13 on an H100). Nested TeamThreadRange reductions are fine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
#    Exempt: *_impl.hpp (included by one instantiation unit only), perf/ (one
#    translation unit per benchmark), and a reduction whose previous line says
#    "lint: single translation unit".
bad=$(grep -rn -B1 -A3 --include='*.hpp' --include='*.cpp' --include='*.cu' --exclude='*_impl.hpp' \
        'parallel_reduce(' portable src cuda_specializations tests 2>/dev/null \
  | awk '/lint: single translation unit/ {skip=1; next} /parallel_reduce\(/ {if (skip) {skip=0; next}; cand=$0; n=0; next}
         cand != "" {n++; if ($0 ~ /KOKKOS_LAMBDA/) {print cand; cand=""} else if (n >= 3) cand=""}
         {skip=0}' \
  | grep -v 'TeamThreadRange\|ThreadVectorRange' || true)
if [ -n "$bad" ]; then
  echo "lint: parallel_reduce with KOKKOS_LAMBDA (use a named functor; see portable/predict/lorenzo/lorenzo.hpp):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "lint: ok"
