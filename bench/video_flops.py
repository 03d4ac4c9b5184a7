#!/usr/bin/env python3
"""Parameters and FLOPs per clip of tformer's ViViT models (docs/video.md),
computed from the architecture, not timed: Model 1 (joint), 2 (factorised
encoder), 3 (factorised self-attention), 4 (factorised dot-product
attention), each with tubelet or frame embedding.

    python3 bench/video_flops.py                       # the doc's table (64x64, 16 frames, ...)
    python3 bench/video_flops.py --frames 8 16 32 64   # FLOPs against the number of frames
    python3 bench/video_flops.py --check               # parameters against the torch references (build/hfvenv)
    python3 bench/video_flops.py --kinds 4 --embeddings frame --csv   # one row: parameters,flops

FLOPs count a multiply-add as 2 and cover the matrix products: the tubelet
projection (2 N K D), each attention sub-layer over n tokens (q, k, v and the
output projection 8 n D^2, scores and their weighted sum 4 n^2 D), each MLP
(4 n D d_ff) and the classifier; LayerNorms, softmax and activations (O(n D))
are left out. Model 4's heads split the channels: the spatial half costs
F * 4 S^2 D/2, the temporal half S * 4 F^2 D/2.
"""
import argparse


def shape(c):
    t = 1 if c["embedding"] == "frame" else c["tubelet_t"]
    F = c["frames"] // t
    S = (c["image"] // c["patch"]) ** 2
    K = c["channels"] * t * c["patch"] ** 2
    return F, S, K


def attention(n, D):
    return 8 * n * D * D + 4 * n * n * D


def mlp(n, D, Dff):
    return 4 * n * D * Dff


def flops(c, kind):
    F, S, K = shape(c)
    D, Dff, L, Lt = c["d_model"], c["d_ff"] or 4 * c["d_model"], c["layers"], c["layers_temporal"]
    total = 2 * F * S * K * D + 2 * D * c["labels"]
    if kind == 1:
        n = F * S + 1
        total += L * (attention(n, D) + mlp(n, D, Dff))
    elif kind == 2:
        total += F * L * (attention(S + 1, D) + mlp(S + 1, D, Dff))
        total += Lt * (attention(F + 1, D) + mlp(F + 1, D, Dff))
    elif kind == 3:
        total += L * (F * attention(S, D) + S * attention(F, D) + mlp(F * S, D, Dff))
    else:
        n = F * S
        total += L * (8 * n * D * D + 2 * F * S * S * D + 2 * S * F * F * D + mlp(n, D, Dff))
    return total


def params(c, kind):
    F, S, K = shape(c)
    D, Dff, L, Lt = c["d_model"], c["d_ff"] or 4 * c["d_model"], c["layers"], c["layers_temporal"]
    block = 4 * (D * D + D) + 2 * D + (D * Dff + Dff) + (Dff * D + D) + 2 * D  # attention, LN, MLP, LN
    p = K * D + D + D * c["labels"] + c["labels"]  # projection, classifier
    if kind == 1:
        p += D + (F * S + 1) * D + L * block + 2 * D
    elif kind == 2:
        p += D + (S + 1) * D + L * block + 2 * D + D + (F + 1) * D + Lt * block + 2 * D
    elif kind == 3:
        p += F * S * D + L * (block + 4 * (D * D + D) + 2 * D) + 2 * D
    else:  # Model 1's, less the class token and its position
        p += F * S * D + L * block + 2 * D
    return p


def check(c):
    """Parameter counts of the torch reference models of tests/ref/gen_vivit_fixtures.py."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "ref"))
    import gen_vivit_fixtures as g
    import vivit_model4 as m4
    from transformers import VivitConfig, VivitForVideoClassification
    for emb in ("tubelet", "frame"):
        t = 1 if emb == "frame" else c["tubelet_t"]
        cfg = VivitConfig(image_size=c["image"], num_frames=c["frames"], tubelet_size=[t, c["patch"], c["patch"]],
                          num_channels=c["channels"], hidden_size=c["d_model"], num_hidden_layers=c["layers"],
                          num_attention_heads=4, intermediate_size=c["d_ff"] or 4 * c["d_model"],
                          num_labels=c["labels"])
        for kind in (1, 2, 3, 4):
            if kind == 4:
                m = m4.Classifier(dict(m4.BASE, image_size=c["image"], num_frames=c["frames"], channels=c["channels"],
                                       tubelet_t=c["tubelet_t"], tubelet_h=c["patch"], tubelet_w=c["patch"],
                                       embedding=emb, n_layer=c["layers"], n_head=4, d_model=c["d_model"],
                                       d_ff=c["d_ff"] or 4 * c["d_model"], n_labels=c["labels"]))
            elif kind == 1:
                m = VivitForVideoClassification(cfg)
            else:
                m = g.Classifier(cfg, kind, c["layers_temporal"])
            got = sum(p.numel() for p in m.parameters())
            want = params(dict(c, embedding=emb), kind)
            print(f"Model {kind} {emb}: torch {got}, formula {want}", "ok" if got == want else "MISMATCH")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", type=int, default=64)
    ap.add_argument("--frames", type=int, nargs="+", default=[16])
    ap.add_argument("--channels", type=int, default=1)
    ap.add_argument("--patch", type=int, default=8)
    ap.add_argument("--tubelet-t", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--d-ff", type=int, default=0)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--layers-temporal", type=int, default=2)
    ap.add_argument("--labels", type=int, default=40)
    ap.add_argument("--kinds", type=int, nargs="+", default=[1, 2, 3, 4], choices=[1, 2, 3, 4])
    ap.add_argument("--embeddings", nargs="+", default=["tubelet", "frame"], choices=["tubelet", "frame"])
    ap.add_argument("--csv", action="store_true", help="rows frames,model,embedding,parameters,flops, no header")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    base = dict(image=a.image, channels=a.channels, patch=a.patch, tubelet_t=a.tubelet_t, d_model=a.d_model,
                d_ff=a.d_ff, layers=a.layers, layers_temporal=a.layers_temporal, labels=a.labels)
    if a.check:
        return check(dict(base, frames=a.frames[0]))
    if not a.csv:
        print("| frames | model | embedding | tokens | parameters | MFLOPs per clip |")
        print("|---:|---|---|---:|---:|---:|")
    for T in a.frames:
        for kind in a.kinds:
            for emb in a.embeddings:
                c = dict(base, frames=T, embedding=emb)
                F, S, _ = shape(c)
                if a.csv:
                    print(f"{T},{kind},{emb},{params(c, kind)},{flops(c, kind)}")
                else:
                    print(f"| {T} | {kind} | {emb} | {F}x{S} | {params(c, kind):,} | {flops(c, kind) / 1e6:,.1f} |")


if __name__ == "__main__":
    main()
