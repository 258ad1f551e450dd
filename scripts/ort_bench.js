#!/usr/bin/env node
// ONNX Runtime as a timing server for `kiln bench --vs ort` and `kiln profile --vs ort`.
//
//   node scripts/ort_bench.js MODEL.onnx --input NAME=FILE.npy ... --out DIR [--threads N] [--profile DIR]
//
// Creates one CPU session (all graph optimizations, intraOpNumThreads N, interOpNumThreads 1,
// sequential execution), loads the inputs, prints one JSON line {"ready":true,...} and then
// answers commands read from stdin, one JSON line on stdout per command:
//   outputs   runs once and writes each output to DIR/<name>.npy  -> {"outputs":[{name,file,dtype,dims}]}
//   run K     runs K times, timing each session.run               -> {"times_ms":[t1,...,tK]}
//   run K G   the same, idling G whole milliseconds (a timer, untimed) before each run
//   profile K (with --profile DIR only) ends ORT's profiler and answers each node's median kernel
//             time over the last K runs, from ORT's own trace (a file under DIR)
//                                      -> {"profile_nodes":[{"name","op","ms"}...],"run_ms":median}
//   quit      (or end of stdin) releases the session and exits
// Between commands the process blocks on stdin, so it takes no CPU while kiln measures.
// Errors: one line on stderr and exit 1 (3 when onnxruntime-node is not installed).
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const { writeNpy, sanitize, makeFeeds } = require('./ort_run.js');

function fail(msg, code = 1) {
  process.stderr.write(`ort_bench: ${msg}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const a = { model: null, inputs: [], out: null, threads: 0, profile: null };
  for (let i = 0; i < argv.length; ++i) {
    const x = argv[i];
    if (x === '--input') {
      const v = argv[++i] || '';
      const eq = v.indexOf('=');
      if (eq <= 0) fail('--input needs NAME=FILE.npy', 2);
      a.inputs.push({ name: v.slice(0, eq), file: v.slice(eq + 1) });
    } else if (x === '--out') {
      a.out = argv[++i];
      if (!a.out) fail('--out needs a directory', 2);
    } else if (x === '--profile') {
      a.profile = argv[++i];
      if (!a.profile) fail('--profile needs a directory', 2);
    } else if (x === '--threads') {
      const v = argv[++i];
      if (!/^\d+$/.test(v || '')) fail('--threads needs a non-negative integer', 2);
      a.threads = Number(v);
    } else if (x.startsWith('--')) fail(`unknown flag ${x}`, 2);
    else if (a.model === null) a.model = x;
    else fail(`unexpected argument ${x}`, 2);
  }
  if (!a.model || !a.out) fail('usage: ort_bench.js MODEL.onnx --input NAME=FILE.npy ... --out DIR [--threads N] [--profile DIR]', 2);
  return a;
}

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    if (e.code === 'MODULE_NOT_FOUND') fail('onnxruntime-node is not installed: run scripts/bootstrap.sh', 3);
    throw e;
  }
}

function median(xs) {
  const v = xs.slice().sort((a, b) => a - b);
  const n = v.length;
  return n === 0 ? 0 : n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ORT's trace (Chrome trace events, microseconds): one "model_run" event per session.run and one
// "<node>_kernel_time" event per node per run. Each node's kernel times within the last `k` runs'
// windows, as medians in milliseconds, in the order the nodes first ran.
function nodeMedians(dir, k) {
  const files = fs.readdirSync(dir).filter((f) => f.startsWith('ort_profile') && f.endsWith('.json'))
    .map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (files.length === 0) throw new Error(`ORT wrote no profile under ${dir}`);
  const events = JSON.parse(fs.readFileSync(files[0], 'utf8'));
  const runs = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts).slice(-k);
  if (runs.length === 0) throw new Error('ORT profile has no model_run events');
  const times = new Map();
  const ops = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    if (!runs.some((r) => e.ts >= r.ts && e.ts <= r.ts + r.dur)) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!times.has(name)) times.set(name, []), ops.set(name, (e.args && e.args.op_name) || '');
    times.get(name).push(e.dur / 1000);
  }
  const nodes = [];
  for (const [name, t] of times) nodes.push({ name, op: ops.get(name), ms: median(t) });
  return { profile_nodes: nodes, run_ms: median(runs.map((r) => r.dur / 1000)), runs: runs.length, file: files[0] };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const options = {
    graphOptimizationLevel: 'all', executionProviders: ['cpu'], executionMode: 'sequential',
    interOpNumThreads: 1,
  };
  if (args.threads > 0) options.intraOpNumThreads = args.threads;
  if (args.profile) {
    fs.mkdirSync(args.profile, { recursive: true });
    options.enableProfiling = true;
    options.profileFilePrefix = path.join(args.profile, 'ort_profile');
  }
  let t0 = performance.now();
  const session = await ort.InferenceSession.create(args.model, options);
  const loadMs = performance.now() - t0;

  const feeds = makeFeeds(ort, session, args.inputs);
  fs.mkdirSync(args.out, { recursive: true });
  const reply = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
  reply({ ready: true, load_ms: loadMs, threads: args.threads, inputs: session.inputNames, outputs: session.outputNames });

  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const raw of rl) {
    const line = raw.trim();
    if (line === '' ) continue;
    if (line === 'quit') break;
    if (line === 'outputs') {
      const results = await session.run(feeds);
      const outputs = session.outputNames.map((name) => {
        const t = results[name];
        const file = path.join(args.out, `${sanitize(name)}.npy`);
        writeNpy(file, t.type, t.dims, t.data);
        return { name, file, dtype: t.type, dims: Array.from(t.dims) };
      });
      reply({ outputs });
    } else if (/^run \d+( \d+)?$/.test(line)) {
      const [k, gap] = line.slice(4).split(' ').map(Number);
      const times = [];
      for (let i = 0; i < k; ++i) {
        if (gap > 0) await new Promise((resolve) => setTimeout(resolve, gap));
        t0 = performance.now();
        await session.run(feeds);
        times.push(performance.now() - t0);
      }
      reply({ times_ms: times });
    } else if (/^profile \d+$/.test(line)) {
      if (!args.profile) throw new Error('profile needs --profile DIR');
      await session.endProfiling();
      reply(nodeMedians(args.profile, Number(line.slice(8))));
    } else {
      throw new Error(`unknown command '${line}' (want: outputs, run K [GAP_MS], profile K, quit)`);
    }
  }
  rl.close();
  await session.release();
}

main().catch((e) => fail(String(e.message || e).split('\n')[0]));
