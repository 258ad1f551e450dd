#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (CPU), kiln's correctness and speed peer.
//
//   node scripts/ort_run.js MODEL.onnx --input NAME=FILE.npy ... [--out DIR]
//        [--threads N] [--bench N] [--warmup N] [--json]
//
// Inputs and outputs are NumPy .npy files (f32, f64, i64, i32, u8, i8, bool, f16). Each output
// is written to DIR/<name>.npy, with characters outside [A-Za-z0-9._-] replaced by '_'.
// --bench N times N runs after warm-up and prints {"median_ms", "p90_ms", ...} as JSON.
// --json prints a JSON summary of the outputs (name, dtype, dims, file) instead of text.
'use strict';
const fs = require('fs');
const path = require('path');

// ---- .npy files -------------------------------------------------------------------------
// ORT tensor type <-> numpy descr (little-endian; one-byte types have no byte order).
const NPY_TYPES = {
  float32: { descr: '<f4', array: Float32Array },
  float64: { descr: '<f8', array: Float64Array },
  int64: { descr: '<i8', array: BigInt64Array },
  int32: { descr: '<i4', array: Int32Array },
  uint8: { descr: '|u1', array: Uint8Array },
  int8: { descr: '|i1', array: Int8Array },
  bool: { descr: '|b1', array: Uint8Array },
  float16: { descr: '<f2', array: Uint16Array },  // raw IEEE half bits
};

function typeOfDescr(descr, file) {
  // '=' is native order (little-endian on every machine we run on); '|' means "no order".
  const norm = descr.replace(/^[=|]/, '<');
  for (const [type, t] of Object.entries(NPY_TYPES)) {
    if (t.descr.replace('|', '<') === norm) return type;
  }
  throw new Error(`${file}: unsupported .npy dtype '${descr}' (want f32, f64, i64, i32, u8, i8, bool or f16, little-endian)`);
}

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const magic = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);  // \x93NUMPY
  if (buf.length < 10 || !buf.subarray(0, 6).equals(magic)) throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  if (major < 1 || major > 3) throw new Error(`${file}: unsupported .npy version ${major}.${buf[7]}`);
  const lenBytes = major === 1 ? 2 : 4;
  const headerLen = lenBytes === 2 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = 8 + lenBytes + headerLen;
  if (start > buf.length) throw new Error(`${file}: truncated header`);
  const header = buf.subarray(8 + lenBytes, start).toString(major === 3 ? 'utf8' : 'latin1');
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(`${file}: malformed header ${header.trim()}`);
  if (fortran[1] === 'True') throw new Error(`${file}: Fortran-order arrays are not supported`);
  const type = typeOfDescr(descr[1], file);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const Arr = NPY_TYPES[type].array;
  const bytes = count * Arr.BYTES_PER_ELEMENT;
  if (start + bytes > buf.length) throw new Error(`${file}: truncated data (want ${bytes} bytes after the header)`);
  // Copy into a fresh, aligned ArrayBuffer (the file's data offset need not be aligned).
  const data = new Arr(count);
  new Uint8Array(data.buffer).set(buf.subarray(start, start + bytes));
  return { type, dims, data };
}

function writeNpy(file, type, dims, data) {
  const t = NPY_TYPES[type];
  if (!t) throw new Error(`${file}: cannot write ORT tensor type '${type}' as .npy`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${t.descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends in '\n'.
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(pre);
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

function sanitize(name) {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

// ---- command line -------------------------------------------------------------------------
function usage(msg) {
  if (msg) console.error(`ort_run: ${msg}`);
  console.error('usage: node scripts/ort_run.js MODEL.onnx --input NAME=FILE.npy ... [--out DIR] ' +
    '[--threads N] [--bench N] [--warmup N] [--json]');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { model: null, inputs: [], out: null, threads: 0, bench: 0, warmup: -1, json: false };
  const intArg = (flag, v) => {
    if (v === undefined || !/^\d+$/.test(v)) usage(`${flag} needs a non-negative integer`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; ++i) {
    const x = argv[i];
    if (x === '--input') {
      const v = argv[++i];
      const eq = v ? v.indexOf('=') : -1;
      if (eq <= 0) usage('--input needs NAME=FILE.npy');
      a.inputs.push({ name: v.slice(0, eq), file: v.slice(eq + 1) });
    } else if (x === '--out') {
      a.out = argv[++i];
      if (!a.out) usage('--out needs a directory');
    } else if (x === '--threads') a.threads = intArg(x, argv[++i]);
    else if (x === '--bench') a.bench = intArg(x, argv[++i]);
    else if (x === '--warmup') a.warmup = intArg(x, argv[++i]);
    else if (x === '--json') a.json = true;
    else if (x.startsWith('--')) usage(`unknown flag ${x}`);
    else if (a.model === null) a.model = x;
    else usage(`unexpected argument ${x}`);
  }
  if (!a.model) usage('no model given');
  return a;
}

// ---- run ----------------------------------------------------------------------------------
// The session's feeds from [{name, file}] .npy inputs; every model input must be given once.
function makeFeeds(ort, session, inputs) {
  const feeds = {};
  for (const { name, file } of inputs) {
    if (!session.inputNames.includes(name)) {
      throw new Error(`model has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    }
    const { type, dims, data } = readNpy(file);
    feeds[name] = new ort.Tensor(type, data, dims);
  }
  const missing = session.inputNames.filter((n) => !(n in feeds));
  if (missing.length) throw new Error(`missing inputs: ${missing.join(', ')}`);
  return feeds;
}

function percentile(sorted, p) {  // nearest-rank
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = require('onnxruntime-node');

  const options = { graphOptimizationLevel: 'all', executionProviders: ['cpu'], executionMode: 'sequential' };
  if (args.threads > 0) {
    options.intraOpNumThreads = args.threads;
    options.interOpNumThreads = 1;
  }
  let t0 = performance.now();
  const session = await ort.InferenceSession.create(args.model, options);
  const loadMs = performance.now() - t0;

  const feeds = makeFeeds(ort, session, args.inputs);

  t0 = performance.now();
  const results = await session.run(feeds);
  const runMs = performance.now() - t0;

  const summary = [];
  if (args.out) fs.mkdirSync(args.out, { recursive: true });
  for (const name of session.outputNames) {
    const t = results[name];
    const file = args.out ? path.join(args.out, `${sanitize(name)}.npy`) : null;
    if (file) writeNpy(file, t.type, t.dims, t.data);
    summary.push({ name, dtype: t.type, dims: Array.from(t.dims), file });
  }

  let bench = null;
  if (args.bench > 0) {
    const warmup = args.warmup >= 0 ? args.warmup : Math.min(10, Math.max(1, Math.ceil(args.bench / 10)));
    for (let i = 0; i < warmup; ++i) await session.run(feeds);
    const times = [];
    for (let i = 0; i < args.bench; ++i) {
      t0 = performance.now();
      await session.run(feeds);
      times.push(performance.now() - t0);
    }
    const sorted = [...times].sort((x, y) => x - y);
    const round = (x) => Math.round(x * 1000) / 1000;
    bench = {
      model: args.model, threads: args.threads, runs: args.bench, warmup,
      median_ms: round(percentile(sorted, 0.5)), p90_ms: round(percentile(sorted, 0.9)),
      min_ms: round(sorted[0]), mean_ms: round(times.reduce((x, y) => x + y, 0) / times.length),
    };
  }

  if (bench) {
    console.log(JSON.stringify(args.json ? { ...bench, load_ms: loadMs, outputs: summary } : bench));
  } else if (args.json) {
    console.log(JSON.stringify({ model: args.model, load_ms: loadMs, run_ms: runMs, outputs: summary }));
  } else {
    console.log(`ort_run: ${args.model}: load ${loadMs.toFixed(0)} ms, run ${runMs.toFixed(1)} ms`);
    for (const s of summary) console.log(`  ${s.name} ${s.dtype}[${s.dims.join(',')}]${s.file ? ` -> ${s.file}` : ''}`);
  }
  await session.release();
}

if (require.main === module) {
  main().catch((e) => {
    console.error(`ort_run: ${e.message || e}`);
    process.exit(1);
  });
}

module.exports = { readNpy, writeNpy, sanitize, makeFeeds };
