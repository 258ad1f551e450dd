#!/usr/bin/env bash
# kiln quantize on a resnet50 with trained weights: torchvision's architecture trained on
# scikit-learn's digits (scripts/compress/train_resnet50_digits.py) at 64 x 64 so the training
# stays near 90 s on 2 cores (cached under BINARY_DIR/trained, keyed by the script's hash). The
# zoo's resnet50 has random weights, whose depth amplifies every rounding error; this one is the
# check that all 54 layers in INT8 keep a trained network's output on held-out images: cosine
# >= 0.99 over all of them (0.999 here) and >= 0.95 for the worst one (0.993), accuracy within
# 0.5 points, and ONNX Runtime running kiln's QDQ export agrees with kiln's INT8 artifact.
# usage: quantize_trained.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup quantize_trained
SCRIPT="$SRC/scripts/compress/train_resnet50_digits.py"
M="$BIN/trained/resnet50_digits64"
key=$(cat "$SCRIPT" "$SRC/scripts/zoo/zoo_common.py" | sha256sum | cut -c1-16)
mkdir -p "$BIN/trained"
(
  flock 9
  if [ "$(cat "$M/.stamp" 2>/dev/null)" != "$key" ] || [ ! -f "$M/model.onnx" ]; then
    echo "training resnet50 on digits at 64x64 (cached in $M)"
    # OpenMP threads that sleep instead of spinning at barriers: under ctest -j2 the other core
    # runs another test (fuzz.import's sanitizer build), and spinning threads made the training
    # step ~2x slower (Ice Lake host: 20 against 40 steps in the first minute with a busy
    # core; this test took 784 s of a clean-clone CI). The same model bytes either way.
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$SCRIPT" "$M" --size 64 --epochs 3 2>&1 | tr '\r' '\n' | grep -v -i warn | tail -3 &&
      echo "$key" > "$M/.stamp"
  fi
) 9> "$BIN/trained/.lock"
check "trained model ready" test -f "$M/.stamp"
check "torch trained it (held-out accuracy >= 0.9)" /usr/bin/python3 -c "
import json; d = json.load(open('$M/train.json')); assert d['heldout_accuracy'] >= 0.9, d"

"$KILN" quantize "$M/model.onnx" -o "$T/int8.kiln" --calib "$M/calib" --eval "$M/eval" --report --runs 2 \
  --json "$T/r.json" --cache-dir "$T/cache" > "$T/report.txt" 2> "$T/log"
check "quantize exits 0" test $? -eq 0
check "all 54 layers int8; cosine and accuracy" /usr/bin/python3 -c "
import json, sys
d = json.load(open('$T/r.json'))
o = d['outputs'][0]
a = d['accuracy']
print(f\"  cosine {o['error']['cosine']:.6f}, worst image {o['worst_sample_cosine']:.6f}, accuracy {a['fp32']:.2f} -> {a['int8']:.2f}\")
assert d['quantized_nodes'] == 54 and d['float_nodes'] == [], d['float_nodes']
# Per image: the training differs from CPU to CPU, and so does its least confident image. On a
# Zen 3 host (AVX2, exact int16 products) one image of 240 with half the median logit norm read
# 0.964 (same argmax; the next worst 0.993); the QDQ model interpreted read 0.987 on it.
assert o['error']['cosine'] >= 0.99 and o['worst_sample_cosine'] >= 0.95, o
assert abs(a['int8'] - a['fp32']) <= 0.5, a
"
"$KILN" quantize "$M/model.onnx" -o "$T/qdq.onnx" --format qdq --calib "$M/calib" --quiet 2> /dev/null
"$KILN" bench "$T/int8.kiln" --ort-model "$T/qdq.onnx" --ort-script "$SRC/scripts/ort_bench.js" --runs 2 --warmup 1 \
  --input input="$M/eval/batch_00.npy" --threads 2 --json --quiet > "$T/b.json" 2> "$T/b.err"
check "ORT on the QDQ export agrees with kiln's int8" /usr/bin/python3 -c "
import json
d = json.load(open('$T/b.json'))
assert d['check']['reference'] == 'ort' and d['check']['ok'], d['check']
print('  kiln int8 vs ORT (QDQ):', d['check'])
"
cli_finish
