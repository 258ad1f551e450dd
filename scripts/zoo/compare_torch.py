"""Sanity check of a prepared model directory: compare_torch.py MODEL_DIR

ONNX Runtime's outputs (ort/) must match PyTorch's (torch/, written at export time). They
are the reference the kiln parity tests compare against, so a broken export (or a broken
ort_run.js) has to be caught here, not blamed on kiln. Both are fp32 CPU runs of the same
weights, so anything beyond 1e-3 of the output's scale means something is wrong.
"""
import os
import re
import sys

import numpy as np

REL_LIMIT = 1e-3


def main():
    d = sys.argv[1]
    worst = 0.0
    for f in sorted(os.listdir(os.path.join(d, "torch"))):
        ref = np.load(os.path.join(d, "torch", f))
        ort_file = os.path.join(d, "ort", re.sub(r"[^A-Za-z0-9._-]", "_", f[:-4]) + ".npy")
        got = np.load(ort_file)
        if got.shape != ref.shape or got.dtype != ref.dtype:
            sys.exit(f"compare: {ort_file}: {got.dtype}{list(got.shape)}, torch has {ref.dtype}{list(ref.shape)}")
        if not np.isfinite(got).all():
            sys.exit(f"compare: {ort_file}: non-finite values")
        scale = float(np.abs(ref).max()) or 1.0
        rel = float(np.abs(got.astype("float64") - ref).max()) / scale
        worst = max(worst, rel)
        if rel > REL_LIMIT:
            sys.exit(f"compare: {ort_file}: max |ort - torch| / max|torch| = {rel:.2e} > {REL_LIMIT}")
    print(f"  ort vs torch: worst max|diff|/max|ref| = {worst:.2e}")


if __name__ == "__main__":
    main()
