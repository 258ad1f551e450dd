// Minimal NumPy .npy reader/writer (format 1.0 written; 1.0-3.0 read; little-endian, C order)
// for the dtypes the conformance cases use. Maps to and from onnxruntime tensor type names.
'use strict';
const fs = require('fs');

// numpy descr -> [ort type, typed array constructor]
const DESCR = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<f2': ['float16', Uint16Array],
  '<i8': ['int64', BigInt64Array],
  '<u8': ['uint64', BigUint64Array],
  '<i4': ['int32', Int32Array],
  '<u4': ['uint32', Uint32Array],
  '<i2': ['int16', Int16Array],
  '<u2': ['uint16', Uint16Array],
  '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array],
  '|b1': ['bool', Uint8Array],
};
const DESCR_OF_TYPE = Object.fromEntries(Object.entries(DESCR).map(([d, [t]]) => [t, d]));

function parseHeader(text, path) {
  const descr = /'descr':\s*'([^']+)'/.exec(text);
  const order = /'fortran_order':\s*(True|False)/.exec(text);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(text);
  if (!descr || !order || !shape) throw new Error(`${path}: bad .npy header ${text}`);
  if (order[1] === 'True') throw new Error(`${path}: Fortran-order .npy not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  return { descr: descr[1].replace('=', '<'), dims };
}

// Returns { type (ort type name), dims, data (typed array; bool as Uint8Array) }.
function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const { descr, dims } = parseHeader(buf.toString('latin1', major === 1 ? 10 : 12, start), path);
  const entry = DESCR[descr];
  if (!entry) throw new Error(`${path}: unsupported dtype ${descr}`);
  const [type, Ctor] = entry;
  const n = dims.reduce((a, b) => a * b, 1);
  const bytes = buf.subarray(start, start + n * Ctor.BYTES_PER_ELEMENT);
  if (bytes.length !== n * Ctor.BYTES_PER_ELEMENT) throw new Error(`${path}: truncated data`);
  // Copy into a fresh, aligned buffer (typed arrays need element alignment).
  const data = new Ctor(n);
  new Uint8Array(data.buffer).set(bytes);
  return { type, dims, data };
}

function writeNpy(path, type, dims, data) {
  const descr = DESCR_OF_TYPE[type];
  if (!descr) throw new Error(`${path}: cannot write ort type ${type}`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const unpadded = 10 + header.length + 1;
  header += ' '.repeat((64 - (unpadded % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  // ORT returns bool tensors as arrays of JS booleans or bytes depending on version.
  const body = type === 'bool' ? Buffer.from(Array.from(data, (v) => (v ? 1 : 0)))
    : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const tmp = `${path}.tmp`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, path);
}

module.exports = { readNpy, writeNpy };
