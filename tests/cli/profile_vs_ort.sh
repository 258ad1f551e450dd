#!/usr/bin/env bash
# kiln profile --vs ort end to end: each kernel beside real ONNX Runtime's nodes for the same
# original nodes (JSON and text), and bad use as one line with a non-zero exit.
# usage: profile_vs_ort.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup profile_vs_ort
PY=/usr/bin/python3
MODEL="$SRC/models/digits_cnn.onnx"
ORT="$SRC/scripts/ort_bench.js"

"$KILN" profile "$MODEL" --vs ort --ort-script "$ORT" --json --runs 6 --warmup 1 --batch 2 --threads 1 >"$T/p.json" 2>"$T/p.err"
check "profile --vs ort --json" $PY - "$T/p.json" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read())
o = d["ort"]
assert o["peer"] == "ort" and o["peer_run_ms"] > 0 and o["plain_ms"] == d["plain_ms"], o
assert abs(o["ratio"] - o["plain_ms"] / o["peer_run_ms"]) < 1e-9 * o["ratio"] + 1e-12, o
assert [k["name"] for k in o["kernels"]] == [k["name"] for k in d["kernels"]], o["kernels"]
# Every kernel of this model has ORT nodes for its original nodes (two convolutions, a pool, two
# Gemms): ORT's fused and NCHWc names were traced back to them.
for k in o["kernels"]:
    assert k["peer_ms"] > 0 and k["peer_nodes"], k
    assert abs(k["ratio"] - k["ms"] / k["peer_ms"]) < 1e-9, k
matched = sum(k["peer_ms"] for k in o["kernels"]) + sum(u["ms"] for u in o["unmatched"])
assert abs(matched - o["peer_node_ms"]) < 1e-9, (matched, o["peer_node_ms"])
# ORT's own layout conversion back to NCHW has no original node.
assert "ReorderOutput" in [u["name"] for u in o["unmatched"]], o["unmatched"]
PY

"$KILN" profile "$MODEL" --vs ort --ort-script "$ORT" --runs 5 --warmup 1 --batch 2 --threads 1 >"$T/p.txt" 2>"$T/p.err"
check "ORT's runs bracket kiln's" grep -q "^profile: ONNX Runtime: the other 3 profiled runs" "$T/p.err"
check "profile --vs ort text" grep -q "^against ort (same inputs and threads" "$T/p.txt"
check "kernel rows name ORT's nodes" grep -q "/features/features.6/MaxPool .*MaxPool_output_0_nchwc" "$T/p.txt"

expect_error "--vs other" "--vs takes 'ort'" "$KILN" profile "$MODEL" --vs tvm --batch 2
expect_error "--ort-script alone" "--ort-script needs --vs ort" "$KILN" profile "$MODEL" --ort-script "$ORT" --batch 2
expect_error "missing script" "not found" "$KILN" profile "$MODEL" --vs ort --ort-script "$T/none.js" --batch 2 --runs 1
"$KILN" graph "$MODEL" --format ir --out "$T/m.kir" >/dev/null 2>&1
expect_error "textual IR" "is kiln's textual IR" "$KILN" profile "$T/m.kir" --vs ort --ort-script "$ORT" --batch 2 --runs 1
# An artifact whose source model is gone: ORT has nothing to run.
cp "$MODEL" "$T/m.onnx"
"$KILN" compile "$T/m.onnx" -o "$T/m.kiln" --dim N=2 --quiet >/dev/null 2>&1
rm "$T/m.onnx"
expect_error "artifact without its model" "needs the ONNX model" "$KILN" profile "$T/m.kiln" --vs ort --ort-script "$ORT" --runs 1
cli_finish
