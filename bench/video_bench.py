#!/usr/bin/env python3
"""Time and peak memory per clip of tformer's ViViT models against the
number of frames (docs/video.md): for each model kind (1 joint, 2 factorised
encoder, 3 factorised self-attention, 4 factorised dot-product attention),
embedding (tubelet, frame) and frame count, a randomly initialised
VivitForVideoClassification folder is written (the torch modules of
tests/ref/gen_vivit_fixtures.py and vivit_model4.py), `tformer hf-run` classifies a
batch of random clips under /usr/bin/time -v, and the wall time per clip and
the maximum resident set size go to a CSV (and a PNG with matplotlib).

Run it on a quiet machine (no other jobs): its numbers are timings.

    build/hfvenv/bin/python bench/video_bench.py --frames 8 16 32 64 --out build/video_bench
    build/hfvenv/bin/python bench/video_bench.py --frames 8 --batch 2 --repeat 1 --out build/video_bench_smoke
        (a check that it runs end to end: seconds)
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time

import torch
from safetensors.torch import save_file
from transformers import VivitConfig

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "ref"))
import gen_vivit_fixtures as g  # noqa: E402
import vivit_model4 as m4  # noqa: E402


def write_model(d, kind, emb, frames, a):
    t = 1 if emb == "frame" else a.tubelet_t
    cfg = VivitConfig(image_size=a.image, num_frames=frames, tubelet_size=[t, a.patch, a.patch], num_channels=1,
                      hidden_size=a.d_model, num_hidden_layers=a.layers, num_attention_heads=a.heads,
                      intermediate_size=4 * a.d_model, num_labels=40, hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0)
    arch = "VivitForVideoClassification"
    os.makedirs(d, exist_ok=True)
    if kind == 4:
        c = dict(m4.BASE, architectures=[arch], head=arch, image_size=a.image, num_frames=frames, tubelet_t=a.tubelet_t,
                 tubelet_h=a.patch, tubelet_w=a.patch, embedding=emb, n_layer=a.layers, n_head=a.heads,
                 d_model=a.d_model, d_ff=4 * a.d_model, n_labels=40)
        model = m4.Classifier(c).eval()
        json.dump(c, open(os.path.join(d, "config.json"), "w"))
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(d, "model.safetensors"))
    else:
        model = g.build(arch, kind, cfg, dict(temporal=a.layers_temporal)).eval()
    if kind == 1:
        model.save_pretrained(d, safe_serialization=True)
    elif kind != 4:
        json.dump(g.tformer_config(cfg, arch, kind, a.layers_temporal, False), open(os.path.join(d, "config.json"), "w"))
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(d, "model.safetensors"))
    save_file({"pixel_values": torch.rand(a.batch, frames, 1, a.image, a.image)}, os.path.join(d, "input.safetensors"))


def run(d, a):
    """Best wall time of a.repeat runs and the largest peak RSS (KiB)."""
    best, rss = float("inf"), 0
    env = dict(os.environ, TFORMER_THREADS=str(a.threads))
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-v", a.tformer, "hf-run", "--model", d, "--input",
                            os.path.join(d, "input.safetensors"), "--output", os.path.join(d, "out.safetensors")],
                           capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if p.returncode:
            sys.exit(f"{d}: hf-run failed:\n{p.stderr}")
        best = min(best, wall)
        rss = max(rss, int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)))
    return best, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--kinds", type=int, nargs="+", default=[1, 2, 3, 4], choices=[1, 2, 3, 4])
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--patch", type=int, default=8)
    ap.add_argument("--tubelet-t", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--layers-temporal", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tformer", default="build/tformer")
    ap.add_argument("--out", default="build/video_bench")
    a = ap.parse_args()
    rows = []
    for kind in a.kinds:
        for emb in ("tubelet", "frame"):
            for T in a.frames:
                d = os.path.join(a.out, f"m{kind}_{emb}_{T}")
                write_model(d, kind, emb, T, a)
                wall, rss = run(d, a)
                rows.append(dict(model=kind, embedding=emb, frames=T, ms_per_clip=1000 * wall / a.batch,
                                 peak_rss_mib=rss / 1024))
                print(rows[-1], flush=True)
    with open(os.path.join(a.out, "video_bench.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for kind in a.kinds:
        for emb in ("tubelet", "frame"):
            r = [x for x in rows if x["model"] == kind and x["embedding"] == emb]
            lab = f"Model {kind}, {emb}"
            ax[0].plot([x["frames"] for x in r], [x["ms_per_clip"] for x in r], marker="o", label=lab)
            ax[1].plot([x["frames"] for x in r], [x["peak_rss_mib"] for x in r], marker="o", label=lab)
    ax[0].set(xlabel="frames", ylabel="ms per clip (wall, incl. load)", xscale="log", yscale="log")
    ax[1].set(xlabel="frames", ylabel="peak RSS (MiB)", xscale="log")
    ax[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "video_bench.png"))


if __name__ == "__main__":
    main()
