#!/usr/bin/env python3
"""ViT (and Swin) inference speed against transformers and timm on the same weights and cores
(docs/vision.md, "Inference speed"; issue 12 asks for 2x).

    build/hfvenv/bin/python bench/vit_bench.py --model RUN --data-dir /usr/share/datasets/fashion-mnist

RUN is a ViTForImageClassification or SwinForImageClassification folder
(tformer train --arch vit / swin writes one; AutoModelForImageClassification
picks the class from its config.json). tformer: `tformer classify --data-dir DIR --batch B` over the t10k set
(the whole process: loading the model and reading the idx files included);
transformers 4.x: AutoModelForImageClassification.from_pretrained(RUN) in float32,
the same pixels (bytes / 255, as tformer reads them), torch.inference_mode,
`torch.set_num_threads(--threads)`; for a ViT also timm's VisionTransformer
(timm 1.x, needs torchvision: Debian's python3-torchvision beside its torch)
built from the same config and loaded with the same weights (renamed: q, k, v
concatenated into qkv). Equal work is checked first: the accuracies on the
t10k set must be equal. Batch 64 over every image, batch 1
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


def torch_run(f, x, batch, repeat):
    times = []
    with torch.inference_mode():
        for _ in range(repeat):
            t = time.perf_counter()
            for i in range(0, len(x), batch):
                f(x[i:i + batch])
            times.append(time.perf_counter() - t)
    return len(x) / statistics.median(times)


def timm_vit(hf):
    """timm's VisionTransformer with the weights of transformers' ViTForImageClassification hf, or None."""
    try:
        from functools import partial
        from timm.models.vision_transformer import VisionTransformer
    except ImportError:
        return None
    c = hf.config
    if c.model_type != "vit":
        return None
    m = VisionTransformer(img_size=c.image_size, patch_size=c.patch_size, in_chans=c.num_channels,
                          num_classes=c.num_labels, embed_dim=c.hidden_size, depth=c.num_hidden_layers,
                          num_heads=c.num_attention_heads, mlp_ratio=c.intermediate_size / c.hidden_size,
                          qkv_bias=c.qkv_bias, norm_layer=partial(torch.nn.LayerNorm, eps=c.layer_norm_eps),
                          act_layer=torch.nn.GELU).eval()
    h = hf.state_dict()
    sd = {"cls_token": h["vit.embeddings.cls_token"], "pos_embed": h["vit.embeddings.position_embeddings"],
          "patch_embed.proj.weight": h["vit.embeddings.patch_embeddings.projection.weight"],
          "patch_embed.proj.bias": h["vit.embeddings.patch_embeddings.projection.bias"],
          "norm.weight": h["vit.layernorm.weight"], "norm.bias": h["vit.layernorm.bias"],
          "head.weight": h["classifier.weight"], "head.bias": h["classifier.bias"]}
    for i in range(c.num_hidden_layers):
        p, q = f"vit.encoder.layer.{i}.", f"blocks.{i}."
        a = p + "attention.attention."
        for t in ("weight", "bias"):
            sd[q + "attn.qkv." + t] = torch.cat([h[a + k + "." + t] for k in ("query", "key", "value")])
            for src, dst in (("layernorm_before", "norm1"), ("attention.output.dense", "attn.proj"),
                             ("layernorm_after", "norm2"), ("intermediate.dense", "mlp.fc1"),
                             ("output.dense", "mlp.fc2")):
                sd[q + dst + "." + t] = h[p + src + "." + t]
    m.load_state_dict(sd, strict=True)
    return m


def accuracy(f, x, labels):
    with torch.inference_mode():
        pred = torch.cat([f(x[i:i + 256]).argmax(-1) for i in range(0, len(x), 256)])
    return float((pred.numpy() == labels).mean())


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
    hf_acc = accuracy(lambda b: model(pixel_values=b).logits, x, labels)
    tm = timm_vit(model)
    tm_acc = accuracy(tm, x, labels) if tm is not None else None
    tf_speed64, line = tformer_run(a, 64, len(x))
    tf_acc = float(re.search(r"accuracy ([0-9.]+)", line).group(1))
    print(f"model {a.model}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters; "
          f"{len(x)} t10k images; {a.threads} threads; torch {torch.__version__}")
    print(f"equal work: accuracy transformers {hf_acc:.4f}, tformer {tf_acc:.4f}"
          + (f", timm {tm_acc:.4f}" if tm is not None else "")
          + f" ({'equal' if abs(hf_acc - tf_acc) < 1e-4 and (tm is None or abs(tm_acc - tf_acc) < 1e-4) else 'DIFFERENT'})")
    hf = lambda b: model(pixel_values=b)
    hf64 = torch_run(hf, x, 64, a.repeat)
    hf1 = torch_run(hf, x[:a.n1], 1, a.repeat)
    tm64 = torch_run(tm, x, 64, a.repeat) if tm is not None else None
    tm1 = torch_run(tm, x[:a.n1], 1, a.repeat) if tm is not None else None
    tf1, _ = tformer_run(a, 1, len(x))
    for name, mine, peer_hf, peer_tm in (("batch 64", tf_speed64, hf64, tm64), ("batch 1 ", tf1, hf1, tm1)):
        line = f"{name}: tformer {mine:8.0f} images/s  transformers {peer_hf:8.0f} ({mine / peer_hf:.2f}x)"
        if peer_tm is not None:
            line += f"  timm {peer_tm:8.0f} ({mine / peer_tm:.2f}x)"
        print(line)
    print("(tformer's figures include starting the process, loading the model and reading the idx files)")


if __name__ == "__main__":
    main()
