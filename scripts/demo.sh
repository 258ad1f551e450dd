#!/usr/bin/env bash
# The main job (`make run`): inspect the bundled digits CNN, run it with kiln on the held-out
# test images, run the same inputs through ONNX Runtime, check kiln against ORT, report accuracy.
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
echo "== ONNX Runtime on the same inputs"
node scripts/ort_run.js "$MODEL" --input "$INPUT=$X" --out "$OUT/ort"

echo
echo "== kiln vs ONNX Runtime"
"$KILN" run "$MODEL" --input "$INPUT=$X" --expect "$OUT/ort" --quiet

echo
echo "== accuracy on the held-out split"
/usr/bin/python3 - "$OUT" "$Y" <<'PY'
import glob, sys, numpy as np
out, y = sys.argv[1], np.load(sys.argv[2])
k = np.load(glob.glob(out + "/kiln/*.npy")[0]).argmax(1)
o = np.load(glob.glob(out + "/ort/*.npy")[0]).argmax(1)
print(f"kiln accuracy {100*(k==y).mean():.2f}%  ORT accuracy {100*(o==y).mean():.2f}%  "
      f"kiln/ORT agree on {100*(k==o).mean():.2f}% of {len(y)} images")
PY
