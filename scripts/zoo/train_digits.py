"""Trains the small digits CNN that ships with kiln: train_digits.py MODELS_DIR

scikit-learn's bundled digits (8x8 grey images, 10 classes, 1797 samples; no download),
a fixed 80/20 stratified split, a few epochs of Adam on the CPU (seconds). Writes to
MODELS_DIR (the repository's models/, where the result is committed):
    digits_cnn.onnx               input 'input' f32 [N,1,8,8] (pixels scaled to [0,1]),
                                  output 'logits' f32 [N,10]; opset zoo_common.OPSET
    digits_test_images.npy        the held-out split, f32 [n,1,8,8]
    digits_test_labels.npy        its labels, i64 [n]
    digits_cnn.json               test accuracy at training time (torch), split and seed
"""
import json
import os
import sys
import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch import nn

import zoo_common as zc

EPOCHS, BATCH, LR, TEST_FRACTION = 30, 64, 3e-3, 0.2


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2))                      # 32 x 4 x 4
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} MODELS_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    zc.seed_everything()
    torch.set_num_threads(1)  # tiny tensors: threads cost more than they give, and runs stay reproducible

    digits = load_digits()
    images = (digits.images / 16.0).astype("float32")[:, None]  # [n,1,8,8], pixels 0..16 -> 0..1
    labels = digits.target.astype("int64")
    x_tr, x_te, y_tr, y_te = train_test_split(images, labels, test_size=TEST_FRACTION,
                                              random_state=zc.SEED, stratify=labels)
    x_tr, y_tr, x_te_t, y_te_t = map(torch.from_numpy, (x_tr, y_tr, x_te, y_te))

    model = DigitsCNN()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    t0 = time.perf_counter()
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(x_tr))
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            loss = nn.functional.cross_entropy(model(x_tr[idx]), y_tr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    train_s = time.perf_counter() - t0
    model.eval()
    acc = accuracy(model, x_te_t, y_te_t)
    print(f"  trained {EPOCHS} epochs in {train_s:.1f} s: train acc {accuracy(model, x_tr, y_tr):.4f}, "
          f"test acc {acc:.4f} ({len(y_te)} held out)")
    assert acc >= 0.95, f"digits CNN reached only {acc:.4f} test accuracy"

    path = os.path.join(out, "digits_cnn.onnx")
    torch.onnx.export(model, (x_te_t[:1],), path + ".tmp", opset_version=zc.OPSET, input_names=["input"],
                      output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    os.replace(path + ".tmp", path)
    np.save(os.path.join(out, "digits_test_images.npy"), x_te)
    np.save(os.path.join(out, "digits_test_labels.npy"), y_te)
    with torch.no_grad():
        correct = int((model(x_te_t).argmax(1) == y_te_t).sum())
    meta = {"model": "digits_cnn.onnx", "dataset": "sklearn.datasets.load_digits", "seed": zc.SEED,
            "test_fraction": TEST_FRACTION, "n_test": len(y_te), "test_correct": correct,
            "test_accuracy": correct / len(y_te), "epochs": EPOCHS, "opset": zc.OPSET}
    with open(os.path.join(out, "digits_cnn.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(f"  wrote {path} ({os.path.getsize(path) / 1024:.0f} KiB) and the held-out split")


if __name__ == "__main__":
    main()
