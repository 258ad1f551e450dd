// Runs every conformance case with ONNX Runtime (CPU) and stores its outputs as the reference:
//   node scripts/conformance/ort_cases.js [CASES_DIR]        (default build/conformance)
// For each CASES_DIR/<case>/ it loads model.onnx (model_ort.onnx where present), feeds
// inputs/*.npy and writes ort/<output>.npy.
// A case ORT rejects is removed and listed with the error in CASES_DIR/ort_rejected.txt: the
// generator is expected to produce only valid models, so any entry there needs a look.
'use strict';
const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy } = require('./npy');

const repo = path.resolve(__dirname, '..', '..');
const ort = require(path.join(repo, 'node_modules', 'onnxruntime-node'));

async function runCase(dir) {
  // model_ort.onnx: the same node at the opset where ONNX introduced the op (see make_cases.py).
  const ortModel = path.join(dir, 'model_ort.onnx');
  const model = fs.existsSync(ortModel) ? ortModel : path.join(dir, 'model.onnx');
  const session = await ort.InferenceSession.create(model,
    { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'disabled', logSeverityLevel: 3 });
  const feeds = {};
  for (const name of session.inputNames) {
    const t = readNpy(path.join(dir, 'inputs', `${name}.npy`));
    const data = t.type === 'bool' ? Uint8Array.from(t.data) : t.data;
    feeds[name] = new ort.Tensor(t.type, data, t.dims);
  }
  const results = await session.run(feeds);
  fs.mkdirSync(path.join(dir, 'ort'), { recursive: true });
  for (const name of session.outputNames) {
    const r = results[name];
    writeNpy(path.join(dir, 'ort', `${name}.npy`), r.type, r.dims, r.data);
  }
  await session.release();
}

async function main() {
  const root = path.resolve(process.argv[2] || path.join(repo, 'build', 'conformance'));
  const cases = fs.readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory()).map((e) => e.name).sort();
  const rejected = [];
  for (const c of cases) {
    const dir = path.join(root, c);
    try {
      await runCase(dir);
    } catch (e) {
      rejected.push(`${c}: ${String(e.message || e).split('\n')[0]}`);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  fs.writeFileSync(path.join(root, 'ort_rejected.txt'), rejected.map((l) => `${l}\n`).join(''));
  console.log(`ort_cases: ${cases.length - rejected.length} cases with ORT outputs, ${rejected.length} rejected` +
    (rejected.length ? ` (see ${path.join(root, 'ort_rejected.txt')})` : ''));
}

main().catch((e) => {
  console.error(`ort_cases: ${e.stack || e}`);
  process.exit(1);
});
