#!/usr/bin/env python3
"""ViViT Model 4, factorised dot-product attention, written from the paper
(Arnab et al. 2021, "ViViT: A Video Vision Transformer", Sec. 3.3) in plain
PyTorch (torch 1.13, build/hfvenv; no transformers), and its fixtures for
tests/test_vivit.c:

    build/hfvenv/bin/python tests/ref/vivit_model4.py --out tests/fixtures_vivit
        the committed cases (m4_*)
    build/hfvenv/bin/python tests/ref/vivit_model4.py --random 8 --seed 7 --out build/vivit_fresh
        fresh random configurations (make vivit-conformance)

The paper's Model 4 keeps Model 1's tokens and parameters (one multi-head
self-attention per block) but changes which keys each head sees: with the
tokens z of nt x nh x nw tubelets, half the heads take keys and values from
the same temporal index (spatial heads, Y_s = Attention(Q, K_s, V_s)), half
from the same spatial location (temporal heads, Y_t = Attention(Q, K_t,
V_t)); Y = Concat(Y_s, Y_t) W_O. Here that is spelt out as full attention
over all N = nt*nh*nw tokens with a mask per head: a spatial head's query
(f, s) sees the keys (f, *), a temporal head's the keys (*, s) (the tokens
are time-major: index f*S + s). No reshaping into groups, so the reference
does not share tformer's route. As tformer's Model 3 (and the paper's
factorised models), there is no class token: learned positions over all
tokens, pre-LN blocks, a final LayerNorm, the classifier on the mean of the
final states. The first H/2 heads (channels [0, d_model/2)) are the spatial
ones.

Names are tformer's "tformer-vivit" layout (Hugging Face's Vivit names for
Model 1's tensors, less the class token). A case is a folder: config.json,
model.safetensors, input.safetensors (pixel_values (B,T,C,H,W), labels for
classifier cases), expected.safetensors (logits and loss, or
last_hidden_state) and, with labels, gradients.safetensors: the loss's
gradient with respect to pixel_values and every parameter; all computed in
float64 from the float32 weights and rounded once. Weights: LayerNorms
N(1, 0.2) / N(0, 0.05), positions N(0, 1), every other tensor N(0, 0.4);
pixels U(0, 1).
"""
import json
import math
import os
import shutil

import torch
from safetensors.torch import save_file
from torch import nn
from torch.nn import functional as F

import fixture_cli


class Attention(nn.Module):
    """Multi-head self-attention whose heads see masked key sets (the heads side by side, before W_O)."""

    def __init__(self, d, heads, qkv_bias):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(d, d, bias=qkv_bias)
        self.key = nn.Linear(d, d, bias=qkv_bias)
        self.value = nn.Linear(d, d, bias=qkv_bias)

    def forward(self, x, allowed):
        """x (B,N,d); allowed (H,N,N) bool: head h's query i may see key j."""
        B, N, d = x.shape
        H, dh = self.heads, d // self.heads

        def heads(t):
            return t.reshape(B, N, H, dh).transpose(1, 2)  # (B,H,N,dh)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        s = q @ k.transpose(-1, -2) / math.sqrt(dh)
        s = s.masked_fill(~allowed, float("-inf"))
        y = F.softmax(s, dim=-1) @ v  # (B,H,N,dh)
        return y.transpose(1, 2).reshape(B, N, d)  # Concat(Y_s, Y_t)


def factorised_mask(heads, frames, places):
    """(H,N,N): spatial heads [0,H/2) within a time index, temporal heads within a place."""
    idx = torch.arange(frames * places)
    f, s = idx // places, idx % places
    same_time = f[:, None] == f[None, :]
    same_place = s[:, None] == s[None, :]
    return torch.stack([same_time if h < heads // 2 else same_place for h in range(heads)])


class Block(nn.Module):
    """pre-LN: x + Attn(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.attention = nn.Module()
        self.attention.attention = Attention(d, c["n_head"], c["qkv_bias"])
        self.attention.output = nn.Module()
        self.attention.output.dense = nn.Linear(d, d)  # W_O
        self.intermediate = nn.Module()
        self.intermediate.dense = nn.Linear(d, c["d_ff"])
        self.output = nn.Module()
        self.output.dense = nn.Linear(c["d_ff"], d)
        self.layernorm_before = nn.LayerNorm(d, eps=c["norm_eps"])
        self.layernorm_after = nn.LayerNorm(d, eps=c["norm_eps"])
        self.act = {"gelu_fast": lambda t: F.gelu(t, approximate="tanh"), "gelu": F.gelu, "relu": F.relu,
                    "silu": F.silu}[c["activation"]]

    def forward(self, x, allowed):
        a = self.attention
        x = x + a.output.dense(a.attention(self.layernorm_before(x), allowed))
        return x + self.output.dense(self.act(self.intermediate.dense(self.layernorm_after(x))))


def tube(c):
    return 1 if c["embedding"] == "frame" else c["tubelet_t"]


class Body(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, t = c["d_model"], tube(c)
        self.frames = c["num_frames"] // t
        self.places = (c["image_size"] // c["tubelet_h"]) * (c["image_size"] // c["tubelet_w"])
        self.heads = c["n_head"]
        self.embeddings = nn.Module()
        self.embeddings.patch_embeddings = nn.Module()
        self.embeddings.patch_embeddings.projection = nn.Conv3d(c["channels"], d, (t, c["tubelet_h"], c["tubelet_w"]),
                                                                stride=(t, c["tubelet_h"], c["tubelet_w"]))
        self.embeddings.position_embeddings = nn.Parameter(torch.zeros(1, self.frames * self.places, d))
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList([Block(c) for _ in range(c["n_layer"])])
        self.layernorm = nn.LayerNorm(d, eps=c["norm_eps"])

    def forward(self, pixel_values):
        # (B,T,C,H,W) -> (B,C,T,H,W) -> tubes (B,d,nt,nh,nw) -> (B,nt*nh*nw,d), time-major; frames past the
        # last whole tubelet and pixels past the last whole patch are dropped by the strided convolution
        p = self.embeddings.patch_embeddings.projection(pixel_values.permute(0, 2, 1, 3, 4))
        x = p.flatten(2).transpose(1, 2) + self.embeddings.position_embeddings
        allowed = factorised_mask(self.heads, self.frames, self.places)
        for layer in self.encoder.layer:
            x = layer(x, allowed)
        return self.layernorm(x)


class Classifier(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.vivit = Body(c)
        self.classifier = nn.Linear(c["d_model"], c["n_labels"])

    def forward(self, pixel_values):
        return self.classifier(self.vivit(pixel_values).mean(dim=1))


def init_weights(model, g):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layernorm" in name:
                p.copy_((1.0 + 0.2 * torch.randn(p.shape, generator=g)) if name.endswith("weight")
                        else 0.05 * torch.randn(p.shape, generator=g))
            elif name.endswith("position_embeddings"):
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.4 * torch.randn(p.shape, generator=g))


BASE = dict(model_type="tformer-vivit", channels=1, embedding="tubelet", model_kind=4, n_layer_temporal=1,
            activation="gelu_fast", norm_eps=1e-6, qkv_bias=True, pooler=False)

# (name, head, config, batch, labels)
CASES = [
    ("m4_cls_grey12_t2p4_labels", "VivitForVideoClassification",
     dict(image_size=12, num_frames=6, tubelet_t=2, tubelet_h=4, tubelet_w=4, n_layer=2, n_head=4, d_model=16,
          d_ff=24, n_labels=3), 3, True),
    ("m4_model_rgb10_frames_leftover", "VivitModel",
     dict(image_size=10, num_frames=3, channels=3, tubelet_t=2, tubelet_h=4, tubelet_w=3, embedding="frame",
          n_layer=2, n_head=2, d_model=8, d_ff=12, qkv_bias=False, activation="relu", n_labels=2), 2, False),
]


def write_case(out, name, head, kw, B, labels, seed):
    c = dict(BASE, architectures=[head], head=head, **kw)
    c["n_labels"] = kw.get("n_labels", 2)
    g = torch.Generator().manual_seed(seed)
    model = (Classifier(c) if head == "VivitForVideoClassification" else Body(c)).eval()
    init_weights(model, g)
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    json.dump(c, open(os.path.join(d, "config.json"), "w"), indent=2)
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, os.path.join(d, "model.safetensors"))
    x = {"pixel_values": torch.rand(B, c["num_frames"], c["channels"], c["image_size"], c["image_size"], generator=g)}
    if labels:
        x["labels"] = torch.randint(0, c["n_labels"], (B,), generator=g)
    save_file(x, os.path.join(d, "input.safetensors"))
    m = model.double()
    px = x["pixel_values"].double().requires_grad_(labels)
    y = m(px)
    if head == "VivitModel":
        res = {"last_hidden_state": y}
    else:
        res = {"logits": y}
        if labels:
            res["loss"] = F.cross_entropy(y, x["labels"]).reshape(())
            res["loss"].backward()
            grads = {"pixel_values": px.grad.float()}
            grads.update({k: p.grad.float().contiguous() for k, p in m.named_parameters()})
            save_file(grads, os.path.join(d, "gradients.safetensors"))
    save_file({k: v.detach().float().contiguous() for k, v in res.items()}, os.path.join(d, "expected.safetensors"))
    print(f"wrote {d} (Model 4, torch {torch.__version__}; inputs {', '.join(x)})")


def random_case(r):
    n_head = r.choice([2, 4])
    t, h, w = r.choice([1, 2, 3]), r.choice([2, 3, 4]), r.choice([2, 3, 4])
    kw = dict(image_size=max(h, w) * r.randint(1, 3) + r.choice([0, 1]), num_frames=t * r.randint(1, 3) + r.choice([0, 1]),
              channels=r.choice([1, 3]), tubelet_t=t, tubelet_h=h, tubelet_w=w,
              embedding=r.choice(["tubelet", "frame"]), n_layer=r.randint(1, 2), n_head=n_head,
              d_model=n_head * r.randint(2, 4), d_ff=r.randint(4, 24), qkv_bias=r.random() < 0.7,
              activation=r.choice(["gelu_fast", "gelu", "relu", "silu"]), norm_eps=r.choice([1e-12, 1e-6, 1e-5]),
              n_labels=r.randint(2, 6))
    head = r.choice(["VivitModel", "VivitForVideoClassification"])
    return head, kw, r.randint(1, 3), head == "VivitForVideoClassification" and r.random() < 0.5


def main():
    fixture_cli.run(CASES, write_case, random_case, random_name="m4_random_{:02d}")


if __name__ == "__main__":
    main()
