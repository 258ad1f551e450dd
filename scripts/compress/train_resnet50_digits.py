#!/usr/bin/env python3
"""A resnet50 with trained weights, for measuring quantization on a network that has learned
something (the zoo's resnet50 has torchvision's random initialisation: no pretrained weights
offline, and a random deep network amplifies every perturbation layer by layer, which a trained
one does not).

  train_resnet50_digits.py OUT [--size S] [--epochs E] [--calib C]

torchvision's resnet50 architecture (10 classes), trained from its seeded random initialisation
on scikit-learn's bundled digits (no download) — the training part of the same stratified split
as the digits CNN (models/digits_cnn.json) — with the 8x8 images upsampled (bilinear) to S x S
(default 224, resnet50's own resolution), replicated to 3 channels and normalised by the
training set's mean and deviation. AdamW, one-cycle learning rate, E epochs
(default 2; ~5 min an epoch at 224 on 2 cores).

Writes (the directory under a temporary name, renamed at the end):
  OUT/model.onnx            input 'input' f32 [N,3,S,S], output 'logits' f32 [N,10], opset 14
  OUT/calib/batch_NN.npy    the first C held-out images (default 120), 20 a batch
  OUT/eval/batch_NN.npy     the other held-out images (240 by default), 20 a batch, their
  OUT/eval/labels.npy       labels in order (int64): `kiln quantize --calib OUT/calib --eval OUT/eval`
  OUT/train.json            sizes, epochs, seconds, torch's train and held-out accuracy
"""
import argparse
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "zoo"))
import zoo_common as zc  # noqa: E402  (clears OPENBLAS_CORETYPE before torch loads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

TEST_FRACTION, BATCH = 0.2, 32  # the split of scripts/zoo/train_digits.py


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--calib", type=int, default=120)
    ap.add_argument("--lr", type=float, default=1e-3)
    a = ap.parse_args()
    zc.seed_everything()
    torch.set_num_threads(os.cpu_count() or 1)

    digits = load_digits()
    images = (digits.images / 16.0).astype("float32")[:, None]
    labels = digits.target.astype("int64")
    x_tr, x_te, y_tr, y_te = train_test_split(images, labels, test_size=TEST_FRACTION,
                                              random_state=zc.SEED, stratify=labels)
    assert 0 < a.calib < len(x_te), f"--calib must be within 1..{len(x_te) - 1}"
    mean, std = float(x_tr.mean()), float(x_tr.std())

    def prepare(x):  # [n,1,8,8] in [0,1] -> [n,3,S,S] normalised, as the exported model expects
        x = torch.nn.functional.interpolate(torch.from_numpy(x), size=(a.size, a.size),
                                            mode="bilinear", align_corners=False)
        return ((x - mean) / std).expand(-1, 3, -1, -1).contiguous()

    model = torchvision.models.resnet50(weights=None, num_classes=10)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=1e-4)
    steps = a.epochs * ((len(x_tr) + BATCH - 1) // BATCH)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=steps, pct_start=0.15)
    y_tr_t = torch.from_numpy(y_tr)
    t0 = time.perf_counter()
    step = 0
    for epoch in range(a.epochs):
        model.train()
        order = torch.randperm(len(x_tr))
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            loss = torch.nn.functional.cross_entropy(model(prepare(x_tr[idx.numpy()])), y_tr_t[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 10 == 0 or step == steps:
                print(f"\r  epoch {epoch + 1}/{a.epochs} step {step}/{steps} loss {loss.item():.3f} "
                      f"({time.perf_counter() - t0:.0f} s)", end="", flush=True)
    train_s = time.perf_counter() - t0
    print()
    model.eval()

    def predict(x):
        with torch.no_grad():
            return torch.cat([model(prepare(x[i:i + 40])) for i in range(0, len(x), 40)]).argmax(1).numpy()

    acc_tr = float((predict(x_tr) == y_tr).mean())
    acc_te = float((predict(x_te) == y_te).mean())
    print(f"  trained {a.epochs} epochs at {a.size}x{a.size} in {train_s:.0f} s: train acc {acc_tr:.4f}, "
          f"held-out acc {acc_te:.4f} ({len(y_te)} images)")

    tmp = a.out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "calib"))
    os.makedirs(os.path.join(tmp, "eval"))
    with torch.no_grad():
        torch.onnx.export(model, (prepare(x_te[:1]),), os.path.join(tmp, "model.onnx"), opset_version=zc.OPSET,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, do_constant_folding=True)
    for i in range(0, a.calib, 20):
        np.save(os.path.join(tmp, "calib", f"batch_{i // 20:02d}.npy"), prepare(x_te[i:min(i + 20, a.calib)]).numpy())
    for k, i in enumerate(range(a.calib, len(x_te), 20)):  # batches of 20: the report interprets the first
        np.save(os.path.join(tmp, "eval", f"batch_{k:02d}.npy"), prepare(x_te[i:i + 20]).numpy())
    np.save(os.path.join(tmp, "eval", "labels.npy"), y_te[a.calib:])
    meta = {"architecture": "torchvision.models.resnet50(num_classes=10)", "dataset": "sklearn.datasets.load_digits",
            "seed": zc.SEED, "size": a.size, "epochs": a.epochs, "lr": a.lr, "train_seconds": round(train_s, 1),
            "train_accuracy": acc_tr, "heldout_accuracy": acc_te, "calib_images": a.calib,
            "eval_images": len(y_te) - a.calib, "normalisation": {"mean": mean, "std": std}}
    with open(os.path.join(tmp, "train.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    shutil.rmtree(a.out, ignore_errors=True)
    os.rename(tmp, a.out)
    print(f"  wrote {a.out}")


if __name__ == "__main__":
    main()
