#!/usr/bin/env python3
"""ViT (and Swin) inference speed against transformers on the same weights and cores
(docs/vision.md, "Inference speed"; issue 12 asks for 2x).

    build/hfvenv/bin/python bench/vit_bench.py --model RUN --data-dir /usr/share/datasets/fashion-mnist

RUN is a ViTForImageClassification or SwinForImageClassification folder
(tformer train --arch vit / swin writes one; AutoModelForImageClassification
picks the class from its config.json). tformer: `tformer classify --data-dir DIR --batch B` over the t10k set
(the whole process: loading the model and reading the idx files included);
transformers 4.x: AutoModelForImageClassification.from_pretrained(RUN) in float32,
the same pixels (bytes / 255, as tformer reads them), torch.inference_mode,
`torch.set_num_threads(--threads)`. Equal work is checked first: both
accuracies on the t10k set must be equal. Batch 64 over every image, batch 1
over the first --n1 images; the median of --repeat runs. Run it on a quiet
machine only.
"""
import argparse
import gzip
import os
import re
import statistics
import subprocess
import time

import numpy as np
import torch
from transformers import AutoModelForImageClassification


def read_idx(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find(dir_, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(dir_, name)):
            return os.path.join(dir_, name)
    raise SystemExit(f"{dir_}: no {stem}(.gz)")


def tformer_run(a, batch, n_images):
    """images/s of tformer classify over the t10k set (n_images of them) and its accuracy line."""
    cmd = [a.tformer, "classify", "--model", a.model, "--data-dir", a.data_dir, "--batch", str(batch),
           "--threads", str(a.threads)]
    times, out = [], ""
    for _ in range(a.repeat):
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        times.append(time.perf_counter() - t)
    return n_images / statistics.median(times), out.splitlines()[0]


def torch_run(model, x, batch, repeat):
    times = []
    with torch.inference_mode():
        for _ in range(repeat):
            t = time.perf_counter()
            for i in range(0, len(x), batch):
                model(pixel_values=x[i:i + batch])
            times.append(time.perf_counter() - t)
    return len(x) / statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--tformer", default="build/tformer")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n1", type=int, default=1000, help="images for batch 1 (transformers is slow there)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    images = read_idx(find(a.data_dir, "t10k-images-idx3-ubyte"))
    labels = read_idx(find(a.data_dir, "t10k-labels-idx1-ubyte"))
    model = AutoModelForImageClassification.from_pretrained(a.model).eval()
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)  # (n,1,H,W)
    with torch.inference_mode():
        pred = torch.cat([model(pixel_values=x[i:i + 256]).logits.argmax(-1) for i in range(0, len(x), 256)])
    hf_acc = float((pred.numpy() == labels).mean())
    tf_speed64, line = tformer_run(a, 64, len(x))
    tf_acc = float(re.search(r"accuracy ([0-9.]+)", line).group(1))
    print(f"model {a.model}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters; "
          f"{len(x)} t10k images; {a.threads} threads; torch {torch.__version__}")
    print(f"equal work: accuracy transformers {hf_acc:.4f}, tformer {tf_acc:.4f}"
          f" ({'equal' if abs(hf_acc - tf_acc) < 1e-4 else 'DIFFERENT'})")
    hf64 = torch_run(model, x, 64, a.repeat)
    hf1 = torch_run(model, x[:a.n1], 1, a.repeat)
    tf1, _ = tformer_run(a, 1, len(x))
    print(f"batch 64: tformer {tf_speed64:8.0f} images/s  transformers {hf64:8.0f}  ratio {tf_speed64 / hf64:.2f}x")
    print(f"batch 1:  tformer {tf1:8.0f} images/s  transformers {hf1:8.0f}  ratio {tf1 / hf1:.2f}x")
    print("(tformer's figures include starting the process, loading the model and reading the idx files)")


if __name__ == "__main__":
    main()
