"""Exports a torchvision image classifier: export_vision.py {resnet18|resnet50|mobilenet_v2|efficientnet_b0} OUT_DIR

Weights are torchvision's own random initialisation under a fixed seed (no network here, so
no pretrained weights); BatchNorm statistics are calibrated on random batches so the
activations have a trained network's scale. Input 'input' [N,3,224,224] with a dynamic
batch axis 'N'; output 'logits' [N,1000].
"""
import torch
import torchvision

import zoo_common as zc

MODELS = {
    "resnet18": torchvision.models.resnet18,
    "resnet50": torchvision.models.resnet50,
    "mobilenet_v2": torchvision.models.mobilenet_v2,
    "efficientnet_b0": torchvision.models.efficientnet_b0,
}


def main():
    name, out_dir = zc.main_args()
    zc.seed_everything()
    with zc.Timer("build + calibrate"):
        model = MODELS[name](weights=None)
        gen = torch.Generator().manual_seed(zc.SEED + 2)
        zc.calibrate_batchnorm(model, lambda: torch.randn(8, 3, 224, 224, generator=gen))
    image = zc.rng().standard_normal((1, 3, 224, 224)).astype("float32")
    zc.export(model, out_dir, {"input": image}, ["input"], ["logits"],
              dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})


if __name__ == "__main__":
    main()
