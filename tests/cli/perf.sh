#!/usr/bin/env bash
# kiln perf end to end: the documented --json keys, the measured batch shown in the table, LLM
# mode's KV and all-reduce figures against hand calculations, and bad flags as one-line errors.
# usage: perf.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup perf
PY=/usr/bin/python3
MODEL="$SRC/models/digits_cnn.onnx"

"$KILN" perf "$MODEL" --chip h100 --batch 1,4,64 --max-latency 1 --json >"$T/p.json"
check "perf --json rows" $PY - "$T/p.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["batch"] for r in d["rows"]] == [1, 4, 64], d["rows"]
for r in d["rows"]:
    assert r["latency_ms"] > 0 and r["memory_bytes"] > 0 and r["bound"] in ("compute", "memory", "overhead"), r
    assert abs(r["throughput_per_s"] - r["batch"] / (r["latency_ms"] * 1e-3)) < 1e-6 * r["throughput_per_s"], r
# Latency never falls as the batch grows; the optimal batch is one of those asked for.
lat = [r["latency_ms"] for r in d["rows"]]
assert lat == sorted(lat), lat
assert d["optimal_batch"] in (1, 4, 64), d
assert d["best_batch_under_latency"] in (1, 4, 64), d
PY

# --measured MS@B without --batch: the table is for batch B, and the diagnosis names the efficiency.
"$KILN" perf "$MODEL" --chip a100 --measured 2@8 --json >"$T/m.json"
check "perf --measured batch" $PY - "$T/m.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["batch"] for r in d["rows"]] == [8], d["rows"]
PY
"$KILN" perf "$MODEL" --chip a100 --measured 2@8 >"$T/m.txt"
check "perf --measured text" grep -q "^measured 2 ms at batch 8; predicted .* efficiency" "$T/m.txt"

# LLM mode: 2 layers, 4 KV heads of 64 at bf16 -> K and V: 2*2*4*64*2 = 2048 bytes per token;
# at tp=2 a decode step's two ring all-reduces of hidden*2 bytes move 2 * (2*(2-1)/2) * 512 B.
"$KILN" perf --llm layers=2,hidden=256,heads=4,kv_heads=4,ffn=1024,vocab=1000 --context 128 \
  --chip a100 --tp 1,2 --json >"$T/l.json"
check "perf --llm formulas" $PY - "$T/l.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kv_bytes_per_token"] == 2048 and d["kv_bytes_per_sequence"] == 2048 * 128, d
rows = {r["tp"]: r for r in d["tp"]}
assert rows[1]["allreduce_bytes_per_layer"] == 0, rows[1]
assert rows[2]["allreduce_bytes_per_layer"] == 1024, rows[2]
assert rows[2]["weights_bytes_per_device"] < rows[1]["weights_bytes_per_device"], rows
assert d["prefill_ms"] > 0 and d["decode_ms_per_token"] > 0 and d["max_batch"] > 0, d
PY

expect_error "perf without --chip" "--chip is required" "$KILN" perf "$MODEL"
expect_error "perf unknown chip" "nosuchchip" "$KILN" perf "$MODEL" --chip nosuchchip
expect_error "perf --tp without --llm" "--tp belongs to --llm mode" "$KILN" perf "$MODEL" --chip h100 --tp 2
expect_error "perf bad --measured" "fast" "$KILN" perf "$MODEL" --chip h100 --measured fast
expect_error "perf bad precision" "fp7" "$KILN" perf "$MODEL" --chip h100 --precision fp7

cli_finish
