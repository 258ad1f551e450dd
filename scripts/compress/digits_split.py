#!/usr/bin/env python3
"""Splits the digits CNN's committed held-out set (models/digits_test_*.npy, 360 images) into a
calibration part and an evaluation part for `kiln quantize`:

  OUT/calib/batch_NN.npy   the first CALIB images (default 120), in batches of 20
  OUT/eval/input.npy       the remaining images, one batch
  OUT/eval/labels.npy      their labels (int64)

The split is by position (the committed file is already shuffled by the stratified split), so it
is the same every time. Usage: digits_split.py OUT [CALIB]
"""
import os
import sys

import numpy as np

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
out = sys.argv[1]
calib = int(sys.argv[2]) if len(sys.argv) > 2 else 120
images = np.load(os.path.join(root, "models", "digits_test_images.npy"))
labels = np.load(os.path.join(root, "models", "digits_test_labels.npy"))
assert 0 < calib < len(images), f"CALIB must be within 1..{len(images) - 1}"
os.makedirs(os.path.join(out, "calib"), exist_ok=True)
os.makedirs(os.path.join(out, "eval"), exist_ok=True)
for i in range(0, calib, 20):
    np.save(os.path.join(out, "calib", f"batch_{i // 20:02d}.npy"), images[i:min(i + 20, calib)])
np.save(os.path.join(out, "eval", "input.npy"), images[calib:])
np.save(os.path.join(out, "eval", "labels.npy"), labels[calib:].astype(np.int64))
print(f"{calib} calibration images in {out}/calib, {len(images) - calib} evaluation images in {out}/eval")
