"""Fixtures for DeiT's recipe (tests/test_deit.c) from timm's own code.

timm's RandAugment operations (timm/data/auto_augment.py) run on fixed grey
PIL images and arguments; its level functions at fixed magnitudes; Mixup
("batch" mode), rand_bbox / cutmix_bbox_and_lam and mixup_target on a fixed
batch with lambda and box centre fixed; SoftTargetCrossEntropy's loss and
gradient in float64; torch.linspace's drop-path rates in float32.

timm's modules are loaded from their files (timm's package __init__ imports
torchvision, which the comparison does not need): timm must be importable
by find_spec, e.g. `pip install --no-deps --target DIR timm` and
PYTHONPATH=DIR. Run from the repository root:

    PYTHONPATH=DIR python tests/ref/gen_deit_fixtures.py [--out tests/fixtures_deit]

The output is one text file, deit.txt, of sections a line each (numbers in
decimal, images as hex bytes row by row); the header line names the versions.
"""
import argparse
import importlib.util
import os
import random

import numpy as np
import PIL
import torch
from PIL import Image


def load(name):
    root = importlib.util.find_spec("timm").submodule_search_locations[0]
    spec = importlib.util.spec_from_file_location("timm_" + name.replace("/", "_"), os.path.join(root, name))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


aa = load("data/auto_augment.py")
mixup = load("data/mixup.py")
ce = load("loss/cross_entropy.py")

# tformer's op names -> (timm's op function, its level function name)
OPS = {
    "identity": None,
    "autocontrast": ("auto_contrast", "AutoContrast"),
    "equalize": ("equalize", "Equalize"),
    "rotate": ("rotate", "Rotate"),
    "posterize": ("posterize", "PosterizeIncreasing"),
    "solarize": ("solarize", "SolarizeIncreasing"),
    "solarize_add": ("solarize_add", "SolarizeAdd"),
    "contrast": ("contrast", "ContrastIncreasing"),
    "brightness": ("brightness", "BrightnessIncreasing"),
    "sharpness": ("sharpness", "SharpnessIncreasing"),
    "shear_x": ("shear_x", "ShearX"),
    "shear_y": ("shear_y", "ShearY"),
    "translate_x": ("translate_x_rel", "TranslateXRel"),
    "translate_y": ("translate_y_rel", "TranslateYRel"),
}
ARGS = {
    "identity": [0], "autocontrast": [0], "equalize": [0],
    "rotate": [13.5, -27.0, 30.0, 0.0, 7.3, -0.4],
    "posterize": [1, 2, 3, 4],
    "solarize": [0, 26, 128, 231, 256],
    "solarize_add": [0, 33, 110],
    "contrast": [0.1, 0.55, 1.0, 1.45, 1.9], "brightness": [0.1, 0.55, 1.0, 1.45, 1.9],
    "sharpness": [0.1, 0.55, 1.0, 1.45, 1.9],
    "shear_x": [0.3, -0.3, 0.1], "shear_y": [0.3, -0.3, 0.1],
    "translate_x": [0.45, -0.45, 0.123], "translate_y": [0.45, -0.45, 0.123],
}
GEOMETRIC = {"rotate", "shear_x", "shear_y", "translate_x", "translate_y"}


def images():
    rng = np.random.default_rng(12)
    yy, xx = np.mgrid[0:17, 0:20]
    a = np.clip(120 + 90 * np.sin(xx / 3.0) * np.cos(yy / 4.0) + rng.normal(0, 25, (17, 20)), 0, 255)
    a[4:9, 6:15] = 255  # a bright block with edges
    a[0, :] = 0
    b = 40 + rng.integers(0, 50, (12, 12))  # low contrast: autocontrast / equalize stretch it
    b[5, 5] = 200
    c = np.array([[10, 200, 30], [90, 0, 255]])  # smaller than a 3x3 filter
    return [x.astype(np.uint8) for x in (a, b, c)]


def hexbytes(a):
    return a.astype(np.uint8).tobytes().hex()


def randaug_lines():
    out = []
    for k, img in enumerate(images()):
        h, w = img.shape
        out.append(f"image {k} {h} {w} {hexbytes(img)}")
        pil = Image.fromarray(img, "L")
        for op, fn in OPS.items():
            for arg in ARGS[op]:
                if fn is None:
                    res = np.asarray(pil)
                else:
                    kw = {"fillcolor": 0, "resample": Image.BICUBIC} if op in GEOMETRIC else {}
                    res = np.asarray(getattr(aa, fn[0])(pil, arg, **kw) if op not in ("autocontrast", "equalize")
                                     else getattr(aa, fn[0])(pil))
                out.append(f"op {k} {op} {arg!r} {hexbytes(res)}")
    return out


def level_lines():
    out = []
    for op, fn in OPS.items():
        if fn is None or aa.LEVEL_TO_ARG[fn[1]] is None:
            continue
        for m in [0.0, 3.3, 5.0, 9.0, 9.87, 10.0]:
            for negate in (0, 1):
                random.seed(0)
                saved = aa.random.random
                aa.random.random = (lambda: 1.0) if negate else (lambda: 0.0)  # > 0.5: negated
                try:
                    (arg,) = aa.LEVEL_TO_ARG[fn[1]](m, {"translate_pct": 0.45})
                finally:
                    aa.random.random = saved
                out.append(f"level {op} {m!r} {negate} {float(arg)!r}")
    return out


def mix_lines():
    out = []
    x = torch.arange(6 * 1 * 5 * 4, dtype=torch.float32).reshape(6, 1, 5, 4) / 7.0
    target = torch.tensor([3, 1, 4, 1, 5, 9])
    out.append("batch 6 1 5 4 10 " + " ".join(repr(v) for v in x.flatten().tolist()) + " labels "
               + " ".join(str(v) for v in target.tolist()))
    for lam, cut, cy, cx in [(0.3, False, 0, 0), (0.8125, False, 0, 0), (0.3, True, 2, 1), (0.64, True, 0, 3),
                             (0.05, True, 4, 0), (0.9, True, 3, 2)]:
        m = mixup.Mixup(mixup_alpha=1.0, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=10)
        m._params_per_batch = lambda lam=lam, cut=cut: (lam, cut)
        draws = iter([cy, cx, cy, cx])  # the centre rand_bbox draws: once in Mixup, once for the box alone
        saved = mixup.np.random.randint
        mixup.np.random.randint = lambda lo, hi, size=None: next(draws)
        try:
            xm, t = m(x.clone(), target.clone())
            (yl, yh, xl, xh), lam_c = mixup.cutmix_bbox_and_lam(x.shape, lam) if cut else ((0, 0, 0, 0), lam)
        finally:
            mixup.np.random.randint = saved
        out.append(f"mix {lam!r} {int(cut)} {cy} {cx} box {yl} {yh} {xl} {xh} lam {float(lam_c)!r} x "
                   + " ".join(repr(v) for v in xm.flatten().tolist()) + " t "
                   + " ".join(repr(v) for v in t.flatten().tolist()))
    return out


def soft_ce_lines():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(4, 7, generator=g).float()
    t = torch.rand(4, 7, generator=g).float()
    t[1] = 0
    t[1, 2] = 1  # a one-hot row
    t[3] = t[3] / t[3].sum()
    x = logits.double().requires_grad_()
    loss = ce.SoftTargetCrossEntropy()(x, t.double())
    loss.backward()
    return ["softce 4 7 " + " ".join(repr(v) for v in logits.flatten().tolist()) + " t "
            + " ".join(repr(v) for v in t.flatten().tolist()) + f" loss {loss.item()!r} grad "
            + " ".join(repr(v) for v in x.grad.flatten().tolist())]


def linspace_lines():
    out = []
    for rate, n in [(0.1, 12), (0.1, 4), (0.3, 7), (0.05, 2), (0.2, 1)]:
        out.append(f"linspace {rate!r} {n} " + " ".join(repr(v) for v in torch.linspace(0, rate, n).tolist()))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures_deit")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    timm_version = importlib.util.find_spec("timm").submodule_search_locations[0]
    ver = open(os.path.join(timm_version, "version.py")).read().split("'")[1]
    lines = [f"# timm {ver}, Pillow {PIL.__version__}, torch {torch.__version__}, numpy {np.__version__}"]
    lines += randaug_lines() + level_lines() + mix_lines() + soft_ce_lines() + linspace_lines()
    with open(os.path.join(a.out, "deit.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} lines into {a.out}/deit.txt")


if __name__ == "__main__":
    main()
