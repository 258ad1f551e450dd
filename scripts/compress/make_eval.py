#!/usr/bin/env python3
"""Held-out evaluation inputs for `kiln quantize --eval DIR` on the zoo models that have no
labelled data offline (random weights, so there is no accuracy to measure: the report gives the
int8 model's agreement with fp32 instead). The zoo's own input comes first, then N seeded
synthetic batches from a seed no calibration run uses.

  make_eval.py image ZOO_INPUT.npy OUT [N]     standard-normal images like the zoo input
  make_eval.py tokens ZOO_INPUTS_DIR OUT [N]   random token ids (1000..29999) with a random
                                               amount of padding (id 0, mask 0) at the end
Files: OUT/<input>.<k>.npy (k = 0 is the zoo input).
"""
import os
import sys

import numpy as np

kind, src, out = sys.argv[1], sys.argv[2], sys.argv[3]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 3
rng = np.random.default_rng(20240917)
os.makedirs(out, exist_ok=True)
if kind == "image":
    x = np.load(src)
    np.save(os.path.join(out, "input.0.npy"), x)
    for k in range(1, n + 1):
        np.save(os.path.join(out, f"input.{k}.npy"), rng.standard_normal(x.shape).astype(np.float32))
elif kind == "tokens":
    ids = np.load(os.path.join(src, "input_ids.npy"))
    mask = np.load(os.path.join(src, "attention_mask.npy"))
    np.save(os.path.join(out, "input_ids.0.npy"), ids)
    np.save(os.path.join(out, "attention_mask.0.npy"), mask)
    for k in range(1, n + 1):
        seq = ids.shape[1]
        valid = int(rng.integers(seq // 2, seq + 1))
        i = np.zeros_like(ids)
        m = np.zeros_like(mask)
        i[0, :valid] = rng.integers(1000, 30000, size=valid)
        m[0, :valid] = 1
        np.save(os.path.join(out, f"input_ids.{k}.npy"), i)
        np.save(os.path.join(out, f"attention_mask.{k}.npy"), m)
else:
    sys.exit("kind must be image or tokens")
print(f"wrote {n + 1} batches to {out}")
