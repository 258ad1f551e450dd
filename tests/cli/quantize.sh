#!/usr/bin/env bash
# kiln quantize on the digits CNN: the committed held-out split divided into calibration and
# evaluation images, an artifact with a report (accuracy within 0.5 points), a QDQ model that
# kiln compiles and runs, a JSON report, and the one-line errors of bad flags.
# usage: quantize.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup quantize
MODEL="$SRC/models/digits_cnn.onnx"
/usr/bin/python3 "$SRC/scripts/compress/digits_split.py" "$T/d" > /dev/null || { echo "FAIL split"; exit 1; }

"$KILN" quantize "$MODEL" -o "$T/int8.kiln" --calib "$T/d/calib" --eval "$T/d/eval" --report --runs 3 \
  --json "$T/report.json" --cache-dir "$T/cache" > "$T/report.txt" 2> "$T/log"
check "quantize --report exits 0" test $? -eq 0
check "artifact written" test -s "$T/int8.kiln"
check "report has accuracy" grep -q "accuracy: fp32" "$T/report.txt"
# int8 accuracy within 0.5 points of fp32 (the report's "(+x.xx points)")
check "accuracy within 0.5 points" awk '/accuracy: fp32/ { gsub(/[()+]/, "", $7); d = $7 + 0; exit !(d <= 0.5 && d >= -0.5) }' "$T/report.txt"
check "json report" grep -q '"accuracy": {"fp32"' "$T/report.json"
check "json: full-range weights by default" grep -q '"reduce_range": false' "$T/report.json"
# 7-bit weights: still within 0.5 points on digits, and said so.
"$KILN" quantize "$MODEL" -o "$T/rr.kiln" --calib "$T/d/calib" --eval "$T/d/eval" --reduce-range --report --runs 2 \
  --json "$T/rr.json" --cache-dir "$T/cache" > "$T/rr.txt" 2> /dev/null
check "--reduce-range: json and header" bash -c "grep -q '\"reduce_range\": true' '$T/rr.json' && grep -q '7-bit weights' '$T/rr.txt'"
check "--reduce-range: accuracy within 0.5 points" awk '/accuracy: fp32/ { gsub(/[()+]/, "", $7); d = $7 + 0; exit !(d <= 0.5 && d >= -0.5) }' "$T/rr.txt"
check "progress on stderr" grep -q "calibrating" "$T/log"

"$KILN" quantize "$MODEL" -o "$T/rr.onnx" --dynamic --reduce-range > /dev/null 2> "$T/rr.err"
check "--reduce-range with --dynamic: one-line error, non-zero exit" \
  bash -c "test $? -ne 0 && grep -q 'reduce-range applies to static' '$T/rr.err' && test \$(wc -l < '$T/rr.err') -eq 1"

"$KILN" quantize "$MODEL" -o "$T/qdq.onnx" --format qdq --calib "$T/d/calib" --method percentile:99.9 --quiet 2> /dev/null
check "qdq written" test -s "$T/qdq.onnx"
"$KILN" compile "$T/qdq.onnx" -o "$T/qdq.kiln" --explain --cache-dir "$T/cache" > "$T/explain" 2>&1
check "qdq compiles to int8 kernels" grep -q "kiln::QConv .*int8" "$T/explain"
"$KILN" run "$T/qdq.kiln" --input input="$T/d/eval/input.npy" --out "$T/run" --quiet > /dev/null 2>&1
check "qdq artifact runs" test -s "$T/run/logits.npy"
# bench --ort-model: the int8 artifact against ONNX Runtime on the QDQ model it was compiled from.
"$KILN" bench "$T/qdq.kiln" --ort-model "$T/qdq.onnx" --ort-script "$SRC/scripts/ort_bench.js" --runs 2 --warmup 1 --batch 4 \
  --threads 1 --json --quiet > "$T/qb.json" 2> /dev/null
check "bench --ort-model" /usr/bin/python3 -c "
import json, sys
d = json.load(open('$T/qb.json'))
assert d['source_model'].endswith('qdq.onnx') and d['ort']['median_ms'] > 0 and d['check']['reference'] == 'ort', d
# int8 against int8: judged by cosine (the two round differently), and they agree.
assert d['check']['min_cosine'] == 0.98 and d['check']['ok'], d['check']
"
expect_error "bench --ort-model missing" "--ort-model: " "$KILN" bench "$T/qdq.kiln" --ort-model "$T/none.onnx"

# --accuracy-budget: labels -> accuracy points; the tight cosine budget keeps layers in float.
"$KILN" quantize "$MODEL" -o "$T/b.kiln" --calib "$T/d/calib" --eval "$T/d/eval" --accuracy-budget 0.5 \
  --cache-dir "$T/cache" > "$T/budget.txt" 2> /dev/null
check "budget exits 0" test $? -eq 0
check "budget plan printed" grep -q "accuracy budget: top-1 accuracy drop in points" "$T/budget.txt"
check "budget sensitivity table" grep -q "per-layer sensitivity" "$T/budget.txt"
"$KILN" quantize "$MODEL" -o "$T/b2.kiln" --calib "$T/d/calib" --eval "$T/d/eval" --accuracy-budget 0.001 \
  --budget-metric cosine --cache-dir "$T/cache" --json "$T/b2.json" > "$T/budget2.txt" 2> /dev/null
check "cosine budget keeps layers in float" grep -Eq "plan: [1-9][0-9]* of 4 layers in float" "$T/budget2.txt"
check "budget in json" grep -q '"accuracy_budget": {"metric"' "$T/b2.json"
expect_error "bad budget" "expected a non-negative number" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --calib-random 2 --accuracy-budget -1
expect_error "budget metric without budget" "--budget-metric needs --accuracy-budget" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --calib-random 2 --budget-metric cosine
expect_error "accuracy metric without labels" "needs labels" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --calib-random 2 --accuracy-budget 1 --budget-metric accuracy
expect_error "budget with dynamic" "not --dynamic" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --dynamic --accuracy-budget 1

# --precision bf16: weights in bf16, no calibration.
"$KILN" quantize "$MODEL" -o "$T/bf16.kiln" --precision bf16 --eval "$T/d/eval" --runs 3 --cache-dir "$T/cache" \
  > "$T/bf16.txt" 2> /dev/null
check "bf16 exits 0" test $? -eq 0
check "bf16 report" grep -q "accuracy: fp32 .* bf16" "$T/bf16.txt"
check "bf16 nodes" grep -q "kiln.HalfConv (bf16 weight)" "$T/bf16.txt"
expect_error "precision with calib" "needs no calibration" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --precision bf16 --calib-random 2
expect_error "bad precision" "expected int8, bf16 or fp16" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --precision fp8
expect_error "precision qdq" "writes a kiln artifact" "$KILN" quantize "$MODEL" -o "$T/x.onnx" --precision fp16 --format qdq

expect_error "no calibration" "--calib DIR and --calib-random N" "$KILN" quantize "$MODEL" -o "$T/x.kiln"
expect_error "bad method" "expected minmax, percentile[:P] or entropy" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --calib-random 2 --method median
expect_error "bad format" "expected kiln or qdq" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --calib-random 2 --format tflite
expect_error "unknown exclude" "no Conv/MatMul/Gemm node has this name" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --calib-random 2 --exclude nope
expect_error "missing calib dir" "not a directory" "$KILN" quantize "$MODEL" -o "$T/x.kiln" --calib "$T/none"

# efficientnet_b0 (when the zoo has it): its SiLUs between quantized convolutions become 256-entry
# tables (fold-qdq-lookup), and the artifact computes what it computes without them.
EFF="$BIN/zoo/efficientnet_b0"
if [ -f "$EFF/model.onnx" ]; then
  "$KILN" quantize "$EFF/model.onnx" -o "$T/ef.onnx" --format qdq --calib-random 2 --quiet 2> /dev/null
  check "efficientnet QDQ written" test -s "$T/ef.onnx"
  "$KILN" compile "$T/ef.onnx" -o "$T/ef.kiln" --explain --cache-dir "$T/cache" > "$T/ef.explain" 2>&1
  check "efficientnet: most SiLU chains are tables" test "$(grep -c 'fold-qdq-lookup *applied' "$T/ef.explain")" -ge 40
  "$KILN" compile "$T/ef.onnx" -o "$T/efn.kiln" --disable-pass fold-qdq-lookup --cache-dir "$T/cache" --quiet
  "$KILN" run "$T/efn.kiln" --input "input=$EFF/inputs/input.npy" --out "$T/efn" --quiet
  "$KILN" run "$T/ef.kiln" --input "input=$EFF/inputs/input.npy" --expect "$T/efn" --rtol 0 --atol 1e-3 --quiet \
    > "$T/ef.run" 2>&1
  check "efficientnet: tables give the chains' outputs" test $? -eq 0
fi

cli_finish
