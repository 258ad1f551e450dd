#!/usr/bin/env bash
# Reference interpreter vs ONNX Runtime on the zoo, same inputs, same thread count, one model
# after the other in the same run: scripts/bench_interp.sh BUILD_DIR [RUNS] [THREADS...]
# Prints a Markdown table of medians (ms) and the ratio kiln/ORT. The interpreter is the
# correctness oracle, not the fast path: the ratio shows how far the compiler has to go.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:?usage: bench_interp.sh BUILD_DIR [RUNS] [THREADS...]}
RUNS=${2:-5}
shift $(( $# >= 2 ? 2 : 1 ))
THREADS=("$@")
[ ${#THREADS[@]} -gt 0 ] || THREADS=(1 2)
unset OPENBLAS_CORETYPE
KILN="$BUILD/bin/kiln"
echo "| model | threads | kiln interpreter median ms | ORT median ms | kiln / ORT |"
echo "|---|---|---|---|---|"
for dir in "$BUILD"/zoo/*/; do
  m=$(basename "$dir")
  [ -f "$dir/model.onnx" ] || continue
  feeds=()
  for f in "$dir"/inputs/*.npy; do feeds+=(--input "$(basename "$f" .npy)=$f"); done
  for t in "${THREADS[@]}"; do
    k=$("$KILN" run "$dir/model.onnx" "${feeds[@]}" --threads "$t" --repeat "$RUNS" --quiet | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
    o=$(node "$ROOT/scripts/ort_run.js" "$dir/model.onnx" "${feeds[@]}" --threads "$t" --bench "$RUNS" 2>/dev/null |
        /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["median_ms"])')
    r=$(awk -v a="$k" -v b="$o" 'BEGIN { printf "%.1f", a / b }')
    echo "| $m | $t | $k | $o | $r |"
  done
done
