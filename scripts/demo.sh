#!/usr/bin/env bash
# The main job (`make run`): inspect the bundled digits CNN, run it with kiln's reference
# interpreter on the held-out test images, compile it (`kiln compile`) and run the artifact, run
# the same inputs through ONNX Runtime, check both kiln paths against ORT, report accuracy, and
# time compiled kiln against ORT in the same run.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
KILN="$BUILD/bin/kiln"
MODEL=models/digits_cnn.onnx
X=models/digits_test_images.npy
Y=models/digits_test_labels.npy
OUT="$BUILD/demo"
rm -rf "$OUT"; mkdir -p "$OUT"
INPUT=$(/usr/bin/python3 -c "import onnx; m=onnx.load('$MODEL'); print(m.graph.input[0].name)")

echo "== kiln graph $MODEL"
"$KILN" graph "$MODEL" --dim N=1

echo
echo "== kiln run $MODEL on $(basename $X)"
"$KILN" run "$MODEL" --input "$INPUT=$X" --out "$OUT/kiln"

echo
echo "== kiln compile $MODEL (passes, fusion, packed weights, memory plan)"
"$KILN" compile "$MODEL" -o "$OUT/digits.kiln" --cache-dir "$BUILD/kernel-cache"

echo
echo "== kiln run $OUT/digits.kiln (the compiled runtime)"
"$KILN" run "$OUT/digits.kiln" --input "$INPUT=$X" --out "$OUT/compiled"

echo
echo "== ONNX Runtime on the same inputs"
node scripts/ort_run.js "$MODEL" --input "$INPUT=$X" --out "$OUT/ort"

echo
echo "== kiln (interpreter, then compiled) vs ONNX Runtime"
"$KILN" run "$MODEL" --input "$INPUT=$X" --expect "$OUT/ort" --quiet
"$KILN" run "$OUT/digits.kiln" --input "$INPUT=$X" --expect "$OUT/ort" --quiet

echo
echo "== accuracy on the held-out split"
/usr/bin/python3 - "$OUT" "$Y" <<'PY'
import glob, sys, numpy as np
out, y = sys.argv[1], np.load(sys.argv[2])
k = np.load(glob.glob(out + "/kiln/*.npy")[0]).argmax(1)
c = np.load(glob.glob(out + "/compiled/*.npy")[0]).argmax(1)
o = np.load(glob.glob(out + "/ort/*.npy")[0]).argmax(1)
print(f"kiln accuracy {100*(k==y).mean():.2f}% (compiled {100*(c==y).mean():.2f}%)  ORT accuracy {100*(o==y).mean():.2f}%  "
      f"kiln/ORT agree on {100*(k==o).mean():.2f}% (compiled {100*(c==o).mean():.2f}%) of {len(y)} images")
PY

echo
echo "== speed: compiled kiln vs ONNX Runtime, 1 thread, interleaved in the same run"
"$KILN" bench "$OUT/digits.kiln" --vs ort --threads 1 --runs 10 --input "$INPUT=$X" --quiet
