"""Shared helpers for the zoo export scripts: seeding, ONNX export, input/reference files.

Every export script writes one model directory:
    <out>/model.onnx            the exported model (opset OPSET, fp32)
    <out>/inputs/<name>.npy     deterministic inputs, one file per graph input
    <out>/torch/<name>.npy      PyTorch's outputs for those inputs (a sanity check for ORT)
The directory is written under a temporary name and renamed at the end, so an interrupted
export never leaves a half-written model behind.
"""
import os
import shutil
import sys
import time

# OpenBLAS picks a slower kernel set when the image forces a core type; let it detect the CPU.
# (Must happen before torch loads OpenBLAS.)
os.environ.pop("OPENBLAS_CORETYPE", None)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

# 14: the newest opset whose exports stay plain (17 would fold LayerNorm into one op,
# which hides the ReduceMean/Sub/Pow/Sqrt/Div pattern most real models ship with).
OPSET = 14
SEED = 1234


def seed_everything(seed=SEED):
    torch.manual_seed(seed)
    np.random.seed(seed)


def rng(seed=SEED):
    """Inputs are drawn with numpy so they do not depend on torch's generator."""
    return np.random.RandomState(seed)


def calibrate_batchnorm(model, make_batch, steps=2):
    """Gives every BatchNorm realistic running statistics (as a trained network has) and
    non-trivial affine parameters, so BN folding and the activations' scale are exercised
    the way a real checkpoint would exercise them. Random gamma/beta first, then running
    mean/var accumulated (cumulative average) over a few random batches in train mode."""
    g = torch.Generator().manual_seed(SEED + 1)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for bn in bns:
            bn.weight.copy_(0.5 + torch.rand(bn.weight.shape, generator=g))
            bn.bias.copy_(0.1 * torch.randn(bn.bias.shape, generator=g))
            bn.reset_running_stats()
            bn.momentum = None  # cumulative moving average over the calibration batches
        model.train()
        for _ in range(steps):
            model(make_batch())
    model.eval()


class Timer:
    def __init__(self, what):
        self.what = what

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        print(f"  {self.what}: {time.perf_counter() - self.t0:.1f} s", flush=True)


def export(model, out_dir, inputs, input_names, output_names, dynamic_axes=None):
    """Exports `model` (eval mode, fp32) with `inputs` (dict name -> numpy array, in
    input_names order), records torch's outputs, and atomically publishes out_dir."""
    model.eval()
    tmp = out_dir.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "inputs"))
    os.makedirs(os.path.join(tmp, "torch"))
    args = tuple(torch.from_numpy(inputs[n]) for n in input_names)

    with Timer("torch forward"), torch.no_grad():
        outs = model(*args)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    outs = [o for o in _flatten(outs)]
    assert len(outs) == len(output_names), (len(outs), output_names)

    path = os.path.join(tmp, "model.onnx")
    with Timer("torch.onnx.export"), torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=OPSET, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes or {},
                          do_constant_folding=True)
    with Timer("onnx.checker"):
        onnx.checker.check_model(path)  # by path: works for models over 2 GB too

    for n in input_names:
        np.save(os.path.join(tmp, "inputs", n + ".npy"), inputs[n])
    for n, o in zip(output_names, outs):
        np.save(os.path.join(tmp, "torch", n + ".npy"), o.detach().numpy())

    shutil.rmtree(out_dir, ignore_errors=True)
    os.rename(tmp, out_dir)
    size = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir)
               if os.path.isfile(os.path.join(out_dir, f)))
    print(f"  wrote {out_dir} ({size / 2**20:.1f} MiB)", flush=True)


def _flatten(xs):
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from _flatten(x)
        else:
            yield x


def main_args():
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} MODEL OUT_DIR")
    return sys.argv[1], sys.argv[2]
