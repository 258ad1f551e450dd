#!/usr/bin/env bash
# kiln prune on the digits CNN: 30% of the channels removed with least-squares reconstruction on
# the calibration images, accuracy on the held-out images within 1.5 points, an ONNX model that
# kiln compiles and runs, the JSON report, and the one-line errors of bad flags.
# usage: prune.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup prune
MODEL="$SRC/models/digits_cnn.onnx"
/usr/bin/python3 "$SRC/scripts/compress/digits_split.py" "$T/d" > /dev/null || { echo "FAIL split"; exit 1; }

"$KILN" prune "$MODEL" --ratio 0.3 --calib "$T/d/calib" --eval "$T/d/eval" -o "$T/p.onnx" --runs 3 \
  --json "$T/p.json" --cache-dir "$T/cache" > "$T/report.txt" 2> "$T/log"
check "prune exits 0" test $? -eq 0
check "onnx written" test -s "$T/p.onnx"
check "report has accuracy" grep -q "accuracy: original" "$T/report.txt"
check "report has flops" grep -q "FLOPs" "$T/report.txt"
check "report has latency" grep -q "latency (compiled" "$T/report.txt"
# accuracy within 1.5 points: "(-0.42 points;"
check "accuracy within 1.5 points" awk '/accuracy: original/ { for (i = 1; i <= NF; i++) if ($i ~ /^\(/) { v = substr($i, 2) + 0; exit !(v >= -1.5) } exit 1 }' "$T/report.txt"
check "json report" grep -q '"accuracy": {"before"' "$T/p.json"
"$KILN" compile "$T/p.onnx" -o "$T/p.kiln" --cache-dir "$T/cache" > /dev/null 2>&1
"$KILN" run "$T/p.kiln" --input input="$T/d/eval/input.npy" --out "$T/run" --quiet > /dev/null 2>&1
check "pruned artifact runs" test -s "$T/run/logits.npy"
"$KILN" prune "$MODEL" --ratio 0.5 --norm l2 --no-reconstruct -o "$T/p2.kiln" --cache-dir "$T/cache" > "$T/r2.txt" 2>/dev/null
check "kiln format without reconstruction" test -s "$T/p2.kiln"

expect_error "missing ratio" "--ratio R is required" "$KILN" prune "$MODEL" -o "$T/x.onnx" --calib-random 2
expect_error "bad ratio" "expected a share of channels in (0, 1)" "$KILN" prune "$MODEL" --ratio 1.5 -o "$T/x.onnx" --calib-random 2
expect_error "ratio not a number" "expected a number" "$KILN" prune "$MODEL" --ratio lots -o "$T/x.onnx" --calib-random 2
expect_error "missing calib" "missing calibration data" "$KILN" prune "$MODEL" --ratio 0.3 -o "$T/x.onnx"
expect_error "calib dir missing" "not a directory" "$KILN" prune "$MODEL" --ratio 0.3 -o "$T/x.onnx" --calib "$T/none"
expect_error "bad norm" "expected l1 or l2" "$KILN" prune "$MODEL" --ratio 0.3 -o "$T/x.onnx" --calib-random 2 --norm l3
expect_error "bad format" "expected onnx or kiln" "$KILN" prune "$MODEL" --ratio 0.3 -o "$T/x.onnx" --calib-random 2 --format tflite
expect_error "unknown exclude" "no node has this name" "$KILN" prune "$MODEL" --ratio 0.3 -o "$T/x.onnx" --calib-random 2 --exclude nope

cli_finish
