#!/usr/bin/env bash
# kiln vs ONNX Runtime on every zoo model, at each thread count, with `kiln bench --vs ort`
# (same inputs: the zoo's inputs/*.npy; runs interleaved with ORT's in the same process run).
#
#   scripts/bench_zoo.sh [--backend interp|compiled] BUILD_DIR [RUNS] [THREADS...]
#
# Prints the Markdown table for BENCHMARKS.md: medians in ms, the ratio kiln/ORT (of medians, and
# of minimums, which a shared machine disturbs less), the 1-minute load average at the start
# and end of the pair of runs, the parallel capacity before and after (with several threads: the
# FMA rate the threads got together over one alone; well under the thread count means the host
# was running other work on the same cores and that row's timings show the host), with several
# threads a cache line's round trip between kiln's two threads before and after (above 250 ns the
# cores are far apart: the host's slower placement, in which kiln claims its outputs' lines; "?"
# where it could not be measured), the ratio by placement (`kiln bench`'s rounds split by the
# round trip read before and after each: "close 3: 0.81 · far 12: 0.72" is 3 rounds close and 12
# far, with those rounds' ratio of medians; "–" with one thread), and how far
# kiln's outputs are from ORT's (max|diff| / max|ref|). With fewer threads than CPUs, kiln and ORT
# run pinned to the same first CPUs (`kiln bench` does it), named in the threads column.
# A model whose kiln median comes out under 1 ms is measured again with SMALL_FACTOR times the
# runs (the silero models take ~0.07 ms: 20 of them are 1.4 ms of samples, and their one- and
# two-thread rows swung 0.07 / 0.10 ms on a shared host while both run every kernel on one thread).
# --backend picks the kiln backend
# (default interp; compiled once the compiler is built). A model that fails gets a row saying
# why, and the script exits 1 at the end.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BACKEND=interp
if [ "${1:-}" = "--backend" ]; then
  BACKEND=${2:?--backend needs interp or compiled}
  shift 2
fi
BUILD=${1:?usage: bench_zoo.sh [--backend interp|compiled] BUILD_DIR [RUNS] [THREADS...]}
RUNS=${2:-20}
shift $(( $# >= 2 ? 2 : 1 ))
THREADS=("$@")
[ ${#THREADS[@]} -gt 0 ] || THREADS=(1 2)
KILN="$BUILD/bin/kiln"
ORT_VERSION=$(cd "$ROOT" && node -p "require('onnxruntime-node/package.json').version" 2>/dev/null || echo "?")

SMALL_FACTOR=25
echo "kiln $("$KILN" version | cut -d' ' -f2) ($BACKEND) vs ONNX Runtime $ORT_VERSION: $RUNS runs per model and thread count ($((RUNS * SMALL_FACTOR)) for models under 1 ms)"
echo
echo "| model | threads | kiln median ms | ORT median ms | kiln / ORT | kiln / ORT (min) | block by block (quartiles) | load | capacity | core trip ns | by placement | max\|diff\| / max\|ref\| |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
# bench_json MODEL_DIR THREADS RUNS: `kiln bench --vs ort --json` of the model (stderr kept for the error row).
bench_json() {
  "$KILN" bench "$1/model.onnx" --vs ort --json --quiet --backends "$BACKEND" --runs "$3" \
    --threads "$2" --ort-script "$ROOT/scripts/ort_bench.js" 2>"$BUILD/bench_zoo.err"
}
under_1ms() { /usr/bin/python3 -c 'import json, sys; sys.exit(json.loads(sys.argv[1])["kiln"]["median_ms"] >= 1)' "$1"; }
status=0
for dir in "$BUILD"/zoo/*/; do
  m=$(basename "$dir")
  [ -f "$dir/model.onnx" ] || continue
  for t in "${THREADS[@]}"; do
    if json=$(bench_json "$dir" "$t" "$RUNS") && { ! under_1ms "$json" || json=$(bench_json "$dir" "$t" $((RUNS * SMALL_FACTOR))); }; then
      /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[3])
worst = max((c["rel_diff"] for c in d["check"]["outputs"]), default=0)
flag = "" if d["check"]["ok"] else " (over 1e-4)"
k, o = d["kiln"]["median_ms"], d["ort"]["median_ms"]
load = "–".join("%.1f" % x for x in d.get("load_avg", []))
cap = "–".join("%.2f" % x for x in d.get("parallel_capacity", [])) or "–"
trip = "–".join("%.0f" % x if x > 0 else "?" for x in d.get("core_round_trip_ns", [])) or "–"
p = d.get("ratio_paired")
paired = "%.2f (%.2f–%.2f)" % (p["median"], p["q25"], p["q75"]) if p else "–"
threads = sys.argv[2] + (" (CPU %s)" % d["pinned_cpus"] if d.get("pinned_cpus") else "")
by = d.get("by_placement", {})
place = " · ".join("%s %d: %s" % (w, by[w]["rounds"], "%.2f" % by[w]["ratio"] if "ratio" in by[w] else "–")
                   for w in ("close", "far") if w in by and by[w].get("rounds")) or "–"
print("| %s | %s | %.2f | %.2f | %.2f | %.2f | %s | %s | %s | %s | %s | %.1e%s |" % (sys.argv[1], threads, k, o, d["ratio"],
      d.get("ratio_min", float("nan")), paired, load, cap, trip, place, worst, flag))' "$m" "$t" "$json"
    else
      echo "| $m | $t | error: $(tail -n 1 "$BUILD/bench_zoo.err" | tr '|' '/') | | | | | | | | | |"
      status=1
    fi
  done
done
rm -f "$BUILD/bench_zoo.err"
exit $status
