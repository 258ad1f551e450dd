#!/usr/bin/env python3
"""kiln perf's predictions for the GEMM shapes gpu_probe measures, side by side with a
measured table (h100_probe.txt). Usage:
  tools/gpu_probe/predict.py KILN_BINARY OUTDIR [PROBE_TXT] [CHIP]
Builds y = A[M,K] x B[K,N] ONNX models (M symbolic, named as the batch dim) under OUTDIR."""
import json
import os
import subprocess
import sys

import onnx
from onnx import TensorProto, helper

kiln, outdir = sys.argv[1], sys.argv[2]
probe = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "h100_probe.txt")
chip = sys.argv[4] if len(sys.argv) > 4 else "h100"
os.makedirs(outdir, exist_ok=True)

measured = {}  # (kind, M, N, K) -> (single-call ms, queued ms per call)
for line in open(probe):
    f = line.split()
    if len(f) == 9 and f[0] in ("fp32", "tf32", "bf16", "fp16", "int8") and f[1].isdigit():
        measured[(f[0], int(f[1]), int(f[2]), int(f[3]))] = (float(f[4]), float(f[5]))


def model(k, n):
    path = os.path.join(outdir, f"gemm_{k}x{n}.onnx")
    if not os.path.exists(path):
        a = helper.make_tensor_value_info("A", TensorProto.FLOAT, ["M", k])
        b = helper.make_tensor_value_info("B", TensorProto.FLOAT, [k, n])
        y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["M", n])
        g = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["Y"], name="gemm")], "gemm", [a, b], [y])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


print(f"{'prec':5} {'M':>6} {'N':>6} {'K':>6} {'pred_ms':>9} {'bound':>8} {'single_ms':>9} {'queued_ms':>9} "
      f"{'queued/pred':>11}")
for kind in ("fp32", "tf32", "bf16", "fp16", "int8"):
    for (k_, m, n, k), (single, queued) in sorted(measured.items(), key=lambda e: (e[0][3], e[0][2], e[0][1])):
        if k_ != kind:
            continue
        out = subprocess.run([kiln, "perf", model(k, n), "--chip", chip, "--dim", "M", "--batch", str(m),
                              "--precision", kind, "--json"], check=True, capture_output=True, text=True).stdout
        row = json.loads(out)["rows"][0]
        print(f"{kind:5} {m:6} {n:6} {k:6} {row['latency_ms']:9.4f} {row['bound']:>8} {single:9.4f} {queued:9.4f} "
              f"{queued / row['latency_ms']:11.2f}")
