#!/usr/bin/env bash
# Generates the op conformance cases and ONNX Runtime's reference outputs into OUT_DIR
# (default build/conformance). ctest runs this as the fixture conformance.prepare.
# Needs /usr/bin/python3 with onnx + numpy, and node with onnxruntime-node in <repo>/node_modules.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../build/conformance}
/usr/bin/python3 "$here/make_cases.py" "$out"
node "$here/ort_cases.js" "$out"
