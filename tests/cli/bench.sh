#!/usr/bin/env bash
# kiln bench end to end: JSON fields against real ONNX Runtime, the statistics and the output
# check against a scripted fake peer, default inputs from a zoo-style inputs/ folder, and bad
# input as one line with a non-zero exit.
# usage: bench.sh KILN SOURCE_DIR BINARY_DIR
set -u
KILN=$1; SRC=$2; BIN=$3
source "$SRC/tests/cli/lib/cli_lib.sh"
cli_setup bench
OUTSIDE=$(mktemp -d)  # outside the source tree: node finds no node_modules from here
trap 'rm -rf "$T" "$OUTSIDE"' EXIT
PY=/usr/bin/python3
MODEL="$SRC/models/digits_cnn.onnx"
ORT="$SRC/scripts/ort_bench.js"

# Real ONNX Runtime: the fields BENCHMARKS.md is built from, positive medians, outputs agree.
"$KILN" bench "$MODEL" --backends interp --vs ort --json --runs 3 --batch 8 --threads 1 --ort-script "$ORT" >"$T/b.json" 2>"$T/b.err"
check "bench --vs ort --json" $PY - "$T/b.json" "$MODEL" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read())
for side in ("kiln", "ort"):
    s = d[side]
    assert s["median_ms"] > 0 and s["p90_ms"] >= s["median_ms"] >= s["min_ms"] > 0, (side, s)
    assert len(d["backends"][s["backend"]]["times_ms"]) == 3 and s["runs"] == 3, s
assert d["kiln"]["backend"] == "interp", d["kiln"]
assert abs(d["ratio"] - d["kiln"]["median_ms"] / d["ort"]["median_ms"]) < 0.01 * d["ratio"], d
assert d["threads"] == 1 and d["batch"] == 8 and d["model"] == sys.argv[2], d
assert d["inputs"][0].startswith("input f32[8,1,8,8] random"), d["inputs"]
c = d["check"]
assert c["reference"] == "ort" and c["ok"] and len(c["outputs"]) == 1, c
assert c["outputs"][0]["rel_diff"] < 1e-4 and c["outputs"][0]["cosine"] > 0.9999, c
PY
check "progress on stderr" grep -q "^bench: 3/3 runs: interp" "$T/b.err"

# Defaults from a zoo-style folder: MODEL's inputs/<name>.npy, rows cycled to --batch.
mkdir -p "$T/zoo/inputs"
cp "$MODEL" "$T/zoo/model.onnx"
$PY -c "import numpy as np; np.save('$T/zoo/inputs/input.npy', np.random.RandomState(1).rand(3,1,8,8).astype(np.float32))"
"$KILN" bench "$T/zoo/model.onnx" --backends interp --runs 2 --warmup 1 --batch 5 --quiet >"$T/zoo.txt"
check "zoo inputs cycled to the batch" grep -qF "input f32[5,1,8,8] from $T/zoo/inputs/input.npy (3 rows cycled to --batch 5)" "$T/zoo.txt"
check "interp alone: a table row" grep -qE "^interp +[0-9.]+ +[0-9.]+" "$T/zoo.txt"
check "interp alone: no peer" bash -c "! grep -q '^ort ' '$T/zoo.txt'"
if [ "$(nproc)" -gt 1 ]; then  # several threads by default: the rounds by placement
  check "text: rounds by placement" grep -qE "^by placement \(the cores' round trip" "$T/zoo.txt"
fi

# A scripted peer: known times (40 ms each for the first command, the warm-up; then 1, 2, ...
# per command) and all-zero outputs. The statistics and the block size chosen from the
# warm-up must come out exactly, and the output check must fail (a warning; exit 1 with --check).
mkdir -p "$T/fake"
cat >"$T/fake/ort_bench.js" <<JS
const { writeNpy } = require('$SRC/scripts/ort_run.js');
const rl = require('readline').createInterface({ input: process.stdin });
const args = process.argv.slice(2);
const out = args[args.indexOf('--out') + 1];
require('fs').mkdirSync(out, { recursive: true });
// KILN_FAKE_AFFINITY: write the CPUs this process may run on there (Linux's Cpus_allowed_list).
if (process.env.KILN_FAKE_AFFINITY) {
  const line = require('fs').readFileSync('/proc/self/status', 'utf8').split('\n').find((x) => x.startsWith('Cpus_allowed_list'));
  require('fs').writeFileSync(process.env.KILN_FAKE_AFFINITY, line.split(/\s+/)[1]);
}
console.log(JSON.stringify({ ready: true }));
let runs = 0;
rl.on('line', (l) => {
  if (l === 'quit') process.exit(0);
  if (l === 'outputs') {
    writeNpy(out + '/logits.npy', 'float32', [4, 10], new Float32Array(40));
    console.log(JSON.stringify({ outputs: [] }));
  } else {
    // KILN_FAKE_COMMANDS: append each timing command ("run K" or "run K GAP_MS") there.
    if (process.env.KILN_FAKE_COMMANDS) require('fs').appendFileSync(process.env.KILN_FAKE_COMMANDS, l + '\n');
    const k = Number(l.split(' ')[1]);
    const times = Array.from({ length: k }, (_, i) => (runs === 0 ? 40 : i + 1));
    runs++;
    console.log(JSON.stringify({ times_ms: times }));
    // KILN_FAKE_SPIN_MS: burn the CPU after the reply, as ORT's spinning workers do.
    const end = Date.now() + Number(process.env.KILN_FAKE_SPIN_MS || 0);
    while (Date.now() < end) {}
  }
});
JS
"$KILN" bench "$MODEL" --backends interp --vs ort --ort-script "$T/fake/ort_bench.js" --batch 4 --runs 4 --block 5 --warmup 1 --json \
  >"$T/f.json" 2>"$T/f.err"
check "fake peer: exit 0 without --check" test $? -eq 0
check "fake peer: statistics and failed check" $PY - "$T/f.json" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read())
o = d["ort"]
assert (o["median_ms"], o["p90_ms"], o["min_ms"], o["mean_ms"]) == (2.5, 4, 1, 2.5), o
assert d["backends"]["ort"]["times_ms"] == [1, 2, 3, 4], d["backends"]["ort"]
c = d["check"]
assert not c["ok"] and not c["outputs"][0]["ok"] and c["outputs"][0]["rel_diff"] > 1e-4, c
PY
# No --block: the slowest backend's fastest warm-up run sets blocks of floor(100 / ms) runs
# (1 to 10). The fake peer's warm-up runs take 40 ms (blocks of 2) unless the interpreter's
# fastest one took longer (a loaded machine): the block is checked against both reported times.
"$KILN" bench "$MODEL" --backends interp --vs ort --ort-script "$T/fake/ort_bench.js" --batch 4 --runs 5 --warmup 3 --json --quiet >"$T/f2.json" 2>/dev/null
check "fake peer: blocks sized from the warm-up" $PY - "$T/f2.json" <<'PY'
import json, math, sys
d = json.loads(open(sys.argv[1]).read())
b = d["backends"]
assert b["ort"]["warmup_fastest_ms"] == 40, b["ort"]
slowest = max(b["ort"]["warmup_fastest_ms"], b["interp"]["warmup_fastest_ms"])
block = d["block"]
assert block == min(max(math.floor(100 / slowest), 1), 10) and block <= 2, (block, slowest)
# The fake answers each block of n runs with 1, 2, ..., n ms.
ort = b["ort"]["times_ms"]
assert ort == [i % block + 1 for i in range(5)], (block, ort)
# The block-by-block ratio: each round's kiln block median over ORT's, then the median and
# quartiles of those ratios (linear interpolation).
k = b["interp"]["times_ms"]
def median(v):
    v = sorted(v)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2
ratios = sorted(median(k[i:i + block]) / median(ort[i:i + block]) for i in range(0, 5, block))
def quantile(q):
    x = q * (len(ratios) - 1)
    lo = math.floor(x)
    return ratios[lo] + (ratios[min(lo + 1, len(ratios) - 1)] - ratios[lo]) * (x - lo)
p = d["ratio_paired"]
assert p["blocks"] == len(ratios), p
for key, q in (("median", 0.5), ("q25", 0.25), ("q75", 0.75)):
    assert abs(p[key] - quantile(q)) <= 2e-3 * quantile(q), (key, p, ratios)
assert len(d["load_avg"]) == 2 and d["cores"] >= 1, d
# Several threads on several cores: the FMA rate of the threads together over one alone, before
# and after; it cannot exceed the thread count by more than timing noise.
if min(d["threads"], d["cores"]) > 1:
    cap = d["parallel_capacity"]
    assert len(cap) == 2 and all(0.2 < c <= 1.15 * min(d["threads"], d["cores"]) for c in cap), cap
else:
    assert "parallel_capacity" not in d, d
# Several threads: the cores' round trip before and after, in ns (-1 where the pool's worker did
# not answer in time, as on a loaded machine; the field is left out when neither did).
if d["threads"] > 1 and "core_round_trip_ns" in d:
    trip = d["core_round_trip_ns"]
    assert len(trip) == 2 and any(t > 0 for t in trip) and all(t == -1 or 10 < t < 1e5 for t in trip), trip
if d["threads"] == 1:
    assert "core_round_trip_ns" not in d, d
# Several threads: the round trip again before each round and after the last, and the rounds
# split by it (both readings at or under 250 ns: close; both over: far; else left out), each
# placement's medians those of its rounds' runs.
if d["threads"] > 1:
    trips, by, rounds = d["round_trips_ns"], d["by_placement"], math.ceil(5 / block)
    assert len(trips) == rounds + 1 and all(t == -1 or 10 < t < 1e5 for t in trips), trips
    groups, changed, unread = {"close": [], "far": []}, 0, 0
    for i in range(rounds):
        if min(trips[i], trips[i + 1]) <= 0:
            unread += 1
        elif (trips[i] > 250) != (trips[i + 1] > 250):
            changed += 1
        else:
            groups["far" if trips[i] > 250 else "close"].append(i)
    assert (by["changed_rounds"], by["unread_rounds"]) == (changed, unread), (by, trips)
    for place, idx in groups.items():
        if not idx:
            assert place not in by, (place, by)
            continue
        e = by[place]
        assert e["rounds"] == len(idx), (e, idx)
        for name in ("interp", "ort"):
            t = [x for i in idx for x in b[name]["times_ms"][i * block:(i + 1) * block]]
            s = e["backends"][name]
            assert s["runs"] == len(t) and abs(s["median_ms"] - median(t)) <= 2e-3, (name, s, t)
        ratio = e["backends"]["interp"]["median_ms"] / e["backends"]["ort"]["median_ms"]
        assert abs(e["ratio"] - ratio) <= 1e-2 * ratio, e
else:
    assert "by_placement" not in d and "round_trips_ns" not in d, d
PY
# --gap-ms: the peer is asked to idle that long before each timed run (not before the warm-up),
# and the JSON says so; kiln's compiled backend waits out its workers' idle spin after a block
# (two threads: a one-thread run starts no idle spin).
KILN_FAKE_COMMANDS="$T/commands.txt" "$KILN" bench "$MODEL" --vs ort --ort-script "$T/fake/ort_bench.js" --batch 4 \
  --threads 2 --no-pin --runs 3 --block 2 --warmup 1 --gap-ms 7 --idle-spin-ms 30 --json --quiet >"$T/gap.json" 2>/dev/null
check "--gap-ms: sent to the peer" $PY - "$T/gap.json" "$T/commands.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["gap_ms"] == 7 and d["idle_spin_ms"] == 30, (d["gap_ms"], d["idle_spin_ms"])
assert open(sys.argv[2]).read().split("\n")[:3] == ["run 1", "run 2 7", "run 1 7"], open(sys.argv[2]).read()
wait = d["backends"]["compiled"]["idle_wait_ms"]
assert 15 <= wait <= 31, wait
PY
"$KILN" bench "$MODEL" --batch 4 --threads 2 --no-pin --runs 2 --block 1 --warmup 1 --idle-spin-ms 0 --json --quiet >"$T/nospin.json" 2>/dev/null
check "--idle-spin-ms 0: nothing to wait out" $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); w=d["backends"]["compiled"]["idle_wait_ms"]; assert w < 1, w' "$T/nospin.json"
expect_error "--gap-ms out of range" "--gap-ms must be 0 to 10000" "$KILN" bench "$MODEL" --gap-ms 10001
expect_error "--idle-spin-ms out of range" "--idle-spin-ms must be 0 to 10000" "$KILN" bench "$MODEL" --idle-spin-ms -3
# KILN_IDLE_SPIN_MS: the idle spin the process starts with; --idle-spin-ms still wins; a value
# that is not whole milliseconds in range fails before any verb runs.
KILN_IDLE_SPIN_MS=20 "$KILN" bench "$MODEL" --batch 4 --threads 2 --no-pin --runs 2 --block 1 --warmup 1 --json --quiet >"$T/envspin.json" 2>/dev/null
KILN_IDLE_SPIN_MS=20 "$KILN" bench "$MODEL" --batch 4 --threads 2 --no-pin --runs 2 --block 1 --warmup 1 --idle-spin-ms 5 --json --quiet >"$T/envflag.json" 2>/dev/null
check "KILN_IDLE_SPIN_MS, and --idle-spin-ms over it" $PY - "$T/envspin.json" "$T/envflag.json" <<'PY'
import json, sys
env, flag = (json.load(open(f)) for f in sys.argv[1:3])
assert env["idle_spin_ms"] == 20 and flag["idle_spin_ms"] == 5, (env["idle_spin_ms"], flag["idle_spin_ms"])
assert 5 <= env["backends"]["compiled"]["idle_wait_ms"] <= 21, env["backends"]["compiled"]["idle_wait_ms"]
PY
for bad in abc -1 10001 "" 5ms; do
  expect_error "KILN_IDLE_SPIN_MS='$bad'" "KILN_IDLE_SPIN_MS must be 0 to 10000 (whole milliseconds), got '$bad'" \
    env KILN_IDLE_SPIN_MS="$bad" "$KILN" graph "$MODEL"
done
# A peer that keeps a core busy for 300 ms after each reply: the next block waits until it is
# idle (BenchBackend::wait_until_idle) and the JSON and the text say how long.
KILN_FAKE_SPIN_MS=300 "$KILN" bench "$MODEL" --backends interp --vs ort --ort-script "$T/fake/ort_bench.js" --batch 4 \
  --runs 2 --block 1 --warmup 1 --json --quiet >"$T/spin.json" 2>/dev/null
check "spinning peer: waited for it to go idle" $PY - "$T/spin.json" "$T/f2.json" <<'PY'
import json, sys
spin = json.load(open(sys.argv[1]))["ort"]["idle_wait_ms"]
quiet = json.load(open(sys.argv[2]))["ort"]["idle_wait_ms"]
assert spin >= 20 and spin > quiet, (spin, quiet)
PY
KILN_FAKE_SPIN_MS=300 "$KILN" bench "$MODEL" --backends interp --vs ort --ort-script "$T/fake/ort_bench.js" --batch 4 \
  --runs 2 --block 1 --warmup 1 >"$T/spin.txt" 2>/dev/null
check "spinning peer: the text says so" grep -qE "^ort kept the CPU busy [0-9]+ ms after its blocks" "$T/spin.txt"
"$KILN" bench "$MODEL" --backends interp --batch 4 --runs 2 --threads 1 --json --quiet >"$T/f3.json" 2>/dev/null
check "one thread: no parallel capacity" $PY -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "parallel_capacity" not in d, d' "$T/f3.json"
# Fewer threads than CPUs: kiln and its peer run on the same first CPUs (the peer inherits
# them); --no-pin leaves both to the scheduler.
if [ "$(nproc)" -ge 2 ]; then
  KILN_FAKE_AFFINITY="$T/aff1.txt" "$KILN" bench "$MODEL" --backends interp --vs ort --ort-script "$T/fake/ort_bench.js" \
    --batch 4 --runs 1 --warmup 1 --threads 1 --json --quiet >"$T/pin.json" 2>/dev/null
  check "one thread: kiln and the peer pinned to one CPU" $PY - "$T/pin.json" "$T/aff1.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cpu = open(sys.argv[2]).read().strip()
assert d["pinned_cpus"] is not None and d["pinned_cpus"].isdigit(), d["pinned_cpus"]
assert cpu == d["pinned_cpus"], (cpu, d["pinned_cpus"])
PY
  KILN_FAKE_AFFINITY="$T/aff2.txt" "$KILN" bench "$MODEL" --backends interp --vs ort --ort-script "$T/fake/ort_bench.js" \
    --batch 4 --runs 1 --warmup 1 --threads 1 --no-pin --json --quiet >"$T/nopin.json" 2>/dev/null
  check "--no-pin: neither pinned" $PY - "$T/nopin.json" "$T/aff2.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cpus = open(sys.argv[2]).read().strip()
assert d["pinned_cpus"] is None, d["pinned_cpus"]
assert not cpus.isdigit(), cpus  # a range or a list: more than one CPU
PY
fi
check "fake peer: warning" grep -q "warning: outputs differ from ort" "$T/f.err"
"$KILN" bench "$MODEL" --backends interp --vs ort --ort-script "$T/fake/ort_bench.js" --batch 4 --runs 1 --check --quiet >/dev/null 2>&1
check "fake peer: --check exits 1" test $? -eq 1

# Bad input: one line, non-zero exit.
cat >"$T/static.kir" <<'IR'
kiln.model opset=17
graph g(%x: f32[2,3]) -> (%y) {
  %y = Relu(%x)
}
IR
expect_error "missing model" "cannot open" "$KILN" bench "$T/nope.onnx"
expect_error "bad --backends" "unknown backend 'fast'" "$KILN" bench "$MODEL" --backends interp,fast
expect_error "--batch on a static dim" "static leading dim 2" "$KILN" bench "$T/static.kir" --batch 4
expect_error "missing ORT script" "run scripts/bootstrap.sh" "$KILN" bench "$MODEL" --vs ort --ort-script "$T/nope.js"
cp "$SRC/scripts/ort_bench.js" "$SRC/scripts/ort_run.js" "$OUTSIDE/"
expect_error "missing onnxruntime-node" "onnxruntime-node is not installed: run scripts/bootstrap.sh" \
  "$KILN" bench "$MODEL" --vs ort --ort-script "$OUTSIDE/ort_bench.js" --batch 2 --quiet
expect_error "textual IR vs ort" "ONNX Runtime needs the ONNX model" "$KILN" bench "$T/static.kir" --vs ort --ort-script "$ORT"

cli_finish
