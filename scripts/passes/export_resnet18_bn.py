#!/usr/bin/env python3
"""Exports a torchvision ResNet-18 to ONNX with its BatchNormalization nodes kept, for the
fold-batchnorm test. Weights are seeded random (no download); BN running statistics and
affine parameters are randomised so folding them is not an identity.

usage: export_resnet18_bn.py OUT.onnx
"""
import os
import sys

import torch
import torchvision


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    model.eval()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    torch.onnx.export(model, torch.zeros(1, 3, 224, 224), tmp, input_names=["input"], output_names=["logits"],
                      opset_version=13, training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
