#!/usr/bin/env bash
# kiln graph and kiln run end to end on the bundled model and on a textual-IR model.
# usage: cli_graph_run.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup graph_run
PY=/usr/bin/python3
MODEL="$SRC/models/digits_cnn.onnx"

# graph: text totals, json fields, dot, svg, ir round trip
"$KILN" graph "$MODEL" >"$T/g.txt" 2>"$T/err"
check "graph text totals" grep -q "totals: 9 nodes, 38282 params" "$T/g.txt"
check "graph text histogram" grep -qE "^  Relu +3$" "$T/g.txt"
"$KILN" graph "$MODEL" --format json --dim N=4 >"$T/g.json"
check "graph json" $PY - "$T/g.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["totals"]["nodes"] == 9 and d["totals"]["params"] == 38282, d["totals"]
n = d["nodes"][0]
assert n["op"] == "Conv" and n["flops"] > 0 and {"name", "inputs", "outputs", "flops"} <= n.keys(), n
# --dim N=4 makes every cost static: conv1 = 2*16*1*9*64 MACs*... per sample times 4 (+ bias adds)
conv1 = next(x for x in d["nodes"] if x["op"] == "Conv")
assert conv1["flops"] == 4 * (2 * 16 * 64 * 9 + 16 * 64), conv1["flops"]
assert d["assumed_dims"] == {}, d["assumed_dims"]
PY
"$KILN" graph "$MODEL" --format dot >"$T/g.dot"
check "graph dot" grep -q "digraph" "$T/g.dot"
"$KILN" graph "$MODEL" --format svg --out "$T/g.svg" 2>/dev/null
check "graph svg" grep -q "<svg" "$T/g.svg"
"$KILN" graph "$MODEL" --format ir >"$T/g.kir"
check "ir header" grep -q "^kiln.model" "$T/g.kir"
check "ir parses back" "$KILN" graph "$T/g.kir" --format json -o "$T/g2.json"

# run: .npy in, .npy out named after the output, summary printed
"$KILN" run "$MODEL" --input input="$SRC/models/digits_test_images.npy" --out "$T/out" --threads 2 >"$T/run.txt"
check "run writes logits.npy" test -f "$T/out/logits.npy"
check "run summary" grep -qE "logits +f32 +\[360,10\] +min=" "$T/run.txt"
check "run accuracy" $PY -c "
import numpy as np
p = np.load('$T/out/logits.npy').argmax(1); y = np.load('$SRC/models/digits_test_labels.npy')
assert (p == y).mean() > 0.95, (p == y).mean()"
# --random with a bound dim; the same seed gives the same outputs, another seed does not
"$KILN" run "$MODEL" --random --seed 3 --dim N=2 --out "$T/r1" >/dev/null
"$KILN" run "$MODEL" --random --seed 3 --dim N=2 --out "$T/r2" >/dev/null
"$KILN" run "$MODEL" --random --seed 4 --dim N=2 --out "$T/r3" >/dev/null
check "random is seeded" cmp -s "$T/r1/logits.npy" "$T/r2/logits.npy"
check "seeds differ" bash -c "! cmp -s '$T/r1/logits.npy' '$T/r3/logits.npy'"
check "random shape" $PY -c "import numpy as np; assert np.load('$T/r1/logits.npy').shape == (2, 10)"

# a hand-written textual-IR model with an odd output name: the file name is sanitized
cat >"$T/m.kir" <<'IR'
kiln.model ir=8 opset=13
graph g(%x: f32[2,3]) -> (%"out/y:0") {
  %b = init f32[3] dense<1.0, -1.0, 0.5>
  %s = Add(%x, %b)
  %"out/y:0" = Relu(%s)
}
IR
$PY -c "import numpy as np; np.save('$T/x.npy', np.array([[0,0,0],[-2,2,1]], np.float32))"
"$KILN" run "$T/m.kir" --input x="$T/x.npy" --out "$T/ir" >/dev/null
check "sanitized output name" $PY -c "
import numpy as np
y = np.load('$T/ir/out_y_0.npy')
assert np.array_equal(y, np.array([[1,0,0.5],[0,1,1.5]], np.float32)), y"
# --expect passes against itself and fails (exit 1) against different numbers
check "expect ok" "$KILN" run "$T/m.kir" --input x="$T/x.npy" --expect "$T/ir" --quiet
$PY -c "import numpy as np; np.save('$T/ir/out_y_0.npy', np.zeros((2,3), np.float32))"
"$KILN" run "$T/m.kir" --input x="$T/x.npy" --expect "$T/ir" --quiet >/dev/null 2>&1
check "expect fails on a difference" test $? -eq 1

cli_finish
