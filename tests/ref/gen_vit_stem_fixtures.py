#!/usr/bin/env python3
"""PyTorch's conv2d and ViTs with a convolutional stem (Xiao et al. 2021,
"Early Convolutions Help Transformers See Better") or another pooling than
the class token, for tests/test_vit_stem.c.

    python tests/ref/gen_vit_stem_fixtures.py --out tests/fixtures_vit_stem
        the committed cases (transformers 4.x)

    python tests/ref/gen_vit_stem_fixtures.py --random 6 --seed 1234 --out build/vit_stem_fresh
        fresh random configurations and inputs

A conv2d case (conv2d_*) is a folder holding case.safetensors: x (B,C,H,W),
weight (O,C,K,K), bias (O) (absent: no bias), r (B,O,H',W'),
out = torch.nn.functional.conv2d(x, weight, bias, stride, padding) and the
gradients of sum(out * r): grad_x, grad_weight, grad_bias, in float64,
rounded once; stride_padding (2) int64 holds the two settings (not the
file's metadata, whose order would change from one run to the next).

A model case (stem_*) is a tformer folder (model_type "tformer-vit", the
field table's keys: transformers has no conv stem): config.json,
model.safetensors, input.safetensors, expected.safetensors and, with labels,
gradients.safetensors, as gen_vit_fixtures.py writes them. The reference is
transformers' own ViTModel / ViTForImageClassification with the patch
embedding's projection (Conv2d(C, D, P, stride=P)) replaced by the stem:
log2(P) x [Conv2d(c_in, c_i, 3, stride=2, padding=1), ReLU] (spec
"stem_depth" d > 1: each followed by d - 1 x [Conv2d(c_i, c_i, 3, stride=1,
padding=1), ReLU]) then Conv2d(c, D, 1); ViTPatchEmbeddings flattens and transposes its output as
it does the projection's. Its tensors are renamed for tformer:
...patch_embeddings.projection.<2i> -> ...stem.conv<i>, the last ->
...stem.projection. Weights as gen_vit_fixtures.py draws them (every other
tensor N(0, 0.4)); pixels U(0, 1).

A pooling case (pool_*; spec "pooling" mean or seq, spec "stem" patch or
conv) is ViTForImageClassification whose classifier reads the patch tokens
h[:, 1:] of last_hidden_state pooled, as tformer's `pooling` setting: their
mean, or sequence pooling (Hassani et al. 2021, "Escaping the Big Data
Paradigm with Compact Transformers": a = softmax over the tokens of
Linear(d_model, 1) without a bias, pooled = sum_i a_i h_i; the Linear is
"pooling.score"),
then the classifier and transformers' loss, CrossEntropyLoss.

An LSA case (lsa_*; spec "lsa") is a ViT with locality self-attention
(Lee et al. 2021, "Vision Transformer for Small-Size Datasets", as tformer's
`lsa` setting): each layer's ViTSelfAttention replaced by LSA below, whose
scores q k^T / sqrt(D) are multiplied by head h's temperature[h] and whose
diagonal (each token's own key) is -inf before the softmax; the temperatures
are "...attention.attention.temperature" (H), drawn as the other weights.

transformers 4.36.2 over Debian's torch 1.13 (build/hfvenv).
"""
import copy
import json
import math
import os
import shutil
from types import SimpleNamespace

import torch
import transformers
from safetensors.torch import save_file
from torch import nn
from transformers import ViTConfig, ViTForImageClassification, ViTModel

import fixture_cli

ARCHS = {"ViTModel": ViTModel, "ViTForImageClassification": ViTForImageClassification}

# (name, architecture, ViTConfig keywords, stem_width (0: d_model / patch_size), spec)
CASES = [
    ("stem_cls_grey28_p4_labels", "ViTForImageClassification",
     dict(image_size=28, patch_size=4, num_channels=1, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=24, num_labels=10),
     4, dict(B=3, labels=True)),
    ("stem_model_rgb16_p8_pooler", "ViTModel",
     dict(image_size=16, patch_size=8, num_channels=3, hidden_size=24, num_hidden_layers=1, num_attention_heads=3,
          intermediate_size=20, hidden_act="gelu_new"),
     0, dict(B=2, pooler=True)),
    ("stem_cls_rgb8_p2_relu", "ViTForImageClassification",
     dict(image_size=8, patch_size=2, num_channels=3, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=12, num_labels=4, qkv_bias=False, hidden_act="relu", layer_norm_eps=1e-6),
     5, dict(B=2, labels=True)),
    ("stem_cls_grey28_p4_depth2", "ViTForImageClassification",
     dict(image_size=28, patch_size=4, num_channels=1, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=24, num_labels=10),
     4, dict(B=3, labels=True, stem_depth=2)),
    ("stem_model_rgb16_p8_depth3", "ViTModel",
     dict(image_size=16, patch_size=8, num_channels=3, hidden_size=12, num_hidden_layers=1, num_attention_heads=2,
          intermediate_size=20, hidden_act="gelu_new"),
     3, dict(B=2, pooler=True, stem_depth=3)),
    ("pool_seq_grey28_p4_stem", "ViTForImageClassification",
     dict(image_size=28, patch_size=4, num_channels=1, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=24, num_labels=10),
     4, dict(B=3, labels=True, pooling="seq")),
    ("pool_mean_rgb12_p3_patch", "ViTForImageClassification",
     dict(image_size=12, patch_size=3, num_channels=3, hidden_size=12, num_hidden_layers=2, num_attention_heads=3,
          intermediate_size=20, num_labels=5, hidden_act="gelu_new"),
     0, dict(B=2, labels=True, pooling="mean", stem="patch")),
    ("pool_seq_rgb13_p4_patch", "ViTForImageClassification",
     dict(image_size=13, patch_size=4, num_channels=3, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
          intermediate_size=12, num_labels=3, qkv_bias=False),
     0, dict(B=2, labels=True, pooling="seq", stem="patch")),
    ("lsa_cls_grey28_p4_stem", "ViTForImageClassification",
     dict(image_size=28, patch_size=4, num_channels=1, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=24, num_labels=10),
     4, dict(B=3, labels=True, lsa=True)),
    ("lsa_model_rgb12_p3_patch", "ViTModel",
     dict(image_size=12, patch_size=3, num_channels=3, hidden_size=12, num_hidden_layers=2, num_attention_heads=3,
          intermediate_size=20, hidden_act="gelu_new", qkv_bias=False),
     0, dict(B=2, pooler=False, stem="patch", lsa=True)),
]

# (name, B, C, H, W, O, K, stride, padding, bias)
CONV_CASES = [
    ("conv2d_3x3_s2_p1_odd", 2, 3, 9, 7, 4, 3, 2, 1, True),
    ("conv2d_3x3_s1_p0_nobias", 1, 2, 6, 5, 3, 3, 1, 0, False),
    ("conv2d_5x5_s3_p2", 2, 2, 10, 11, 3, 5, 3, 2, True),
    ("conv2d_1x1", 1, 4, 3, 3, 5, 1, 1, 0, True),
]


def stem_widths(cfg, stem_width, depth=1):
    """(outputs, stride) of each 3x3 convolution: per halving of the grid one
    of stride 2, then depth - 1 of stride 1 at its width."""
    k = cfg.patch_size.bit_length() - 1
    first = max(1, stem_width or cfg.hidden_size // cfg.patch_size)
    return [(first << i, 2 if j == 0 else 1) for i in range(k) for j in range(depth)]


class Stem(nn.Sequential):
    """The stem as a Sequential; ViTModel.forward casts the pixels to
    projection.weight's dtype, here the first convolution's."""

    @property
    def weight(self):
        return self[0].weight


def with_stem(model, cfg, stem_width, depth):
    """model's patch projection replaced by the conv stem."""
    layers, c = [], cfg.num_channels
    for w, stride in stem_widths(cfg, stem_width, depth):
        layers += [nn.Conv2d(c, w, 3, stride=stride, padding=1), nn.ReLU()]
        c = w
    layers.append(nn.Conv2d(c, cfg.hidden_size, 1))
    body = model.vit if hasattr(model, "vit") else model
    body.embeddings.patch_embeddings.projection = Stem(*layers)
    return model


class Pooled(nn.Module):
    """ViTForImageClassification's body and classifier, the classifier reading
    the patch tokens pooled (their mean, or sequence pooling) instead of the
    class token; outputs as transformers' (logits, loss)."""

    def __init__(self, model, cfg, mode):
        super().__init__()
        self.vit, self.classifier, self.mode = model.vit, model.classifier, mode
        if mode == "seq":
            self.pooling = nn.Module()
            self.pooling.score = nn.Linear(cfg.hidden_size, 1, bias=False)  # a bias would cancel in the softmax

    def forward(self, pixel_values, labels=None):
        h = self.vit(pixel_values).last_hidden_state[:, 1:]        # (B,N,C): the patches
        if self.mode == "mean":
            pooled = h.mean(1)
        else:
            a = torch.softmax(self.pooling.score(h).squeeze(-1), dim=1)  # (B,N)
            pooled = (a.unsqueeze(-1) * h).sum(1)
        logits = self.classifier(pooled)
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return SimpleNamespace(logits=logits, loss=loss)


class LSA(nn.Module):
    """ViTSelfAttention with locality self-attention: softmax(q k^T / sqrt(D)
    * temperature[h], the diagonal -inf) v; its outputs as ViTSelfAttention's."""

    def __init__(self, att):
        super().__init__()
        self.query, self.key, self.value = att.query, att.key, att.value
        self.h, self.d = att.num_attention_heads, att.attention_head_size
        self.temperature = nn.Parameter(torch.ones(self.h))

    def forward(self, hidden_states, head_mask=None, output_attentions=False):
        B, T, _ = hidden_states.shape
        split = lambda t: t.view(B, T, self.h, self.d).transpose(1, 2)                 # (B,H,T,D)
        q, k, v = split(self.query(hidden_states)), split(self.key(hidden_states)), split(self.value(hidden_states))
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d) * self.temperature.view(1, -1, 1, 1)  # (B,H,T,T)
        p = s.masked_fill(torch.eye(T, dtype=torch.bool), float("-inf")).softmax(-1)
        o = (p @ v).transpose(1, 2).reshape(B, T, self.h * self.d)
        return (o, p) if output_attentions else (o,)


def with_lsa(model):
    body = model.vit if hasattr(model, "vit") else model
    for layer in body.encoder.layer:
        layer.attention.attention = LSA(layer.attention.attention)
    return model


def tformer_name(name, n_convs):
    """Hugging Face's name with the stem's Sequential -> tformer's."""
    key = "embeddings.patch_embeddings.projection."
    if key not in name or not n_convs:
        return name
    head, tail = name.split(key)
    j, what = tail.split(".")
    j = int(j)
    return head + ("embeddings.stem.projection." if j == 2 * n_convs else f"embeddings.stem.conv{j // 2}.") + what


def tformer_config(cfg, arch, stem_width, pooler, stem="conv", pooling="cls", lsa=False, depth=1):
    act = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}.get(cfg.hidden_act, cfg.hidden_act)
    c = dict(model_type="tformer-vit", architectures=[arch], image_size=cfg.image_size, patch_size=cfg.patch_size,
             stem=stem, stem_width=stem_width if stem == "conv" else 0, pooling=pooling, channels=cfg.num_channels, n_layer=cfg.num_hidden_layers,
             n_head=cfg.num_attention_heads, d_model=cfg.hidden_size, d_ff=cfg.intermediate_size, activation=act,
             norm_eps=cfg.layer_norm_eps, qkv_bias=cfg.qkv_bias, head=arch, n_labels=cfg.num_labels, pooler=pooler)
    if lsa:
        c["lsa"] = True
    if depth != 1:
        c["stem_depth"] = depth
    return c


def reference(model, arch, x):
    """The outputs in float64 from the float32 weights, rounded once."""
    m = copy.deepcopy(model).double().eval()
    args = {"pixel_values": x["pixel_values"].double()}
    if "labels" in x:
        args["labels"] = x["labels"]
    with torch.no_grad():
        out = m(**args)
    if arch == "ViTModel":
        res = {"last_hidden_state": out.last_hidden_state}
        if out.pooler_output is not None:
            res["pooler_output"] = out.pooler_output
    else:
        res = {"logits": out.logits}
        if out.loss is not None:
            res["loss"] = out.loss.reshape(())
    return {k: v.float().contiguous() for k, v in res.items()}


def gradients(model, x, n_convs):
    """The loss's gradients with respect to pixel_values and every parameter
    (tformer's names), float64 from the float32 weights, rounded once."""
    m = copy.deepcopy(model).double().train()  # dropout is 0
    pixels = x["pixel_values"].double().requires_grad_(True)
    m(pixel_values=pixels, labels=x["labels"]).loss.backward()
    res = {"pixel_values": pixels.grad.float()}
    res.update({tformer_name(k, n_convs): p.grad.float().contiguous() for k, p in m.named_parameters()})
    return res


def write_case(out, name, arch, cfg_kw, stem_width, spec, seed):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    cfg = ViTConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **cfg_kw)
    pooler = arch == "ViTModel" and spec.get("pooler", True)
    kw = {"add_pooling_layer": pooler} if arch == "ViTModel" else {}
    stem, pooling = spec.get("stem", "conv"), spec.get("pooling", "cls")
    model = ARCHS[arch](cfg, **kw)
    depth = spec.get("stem_depth", 1)
    model = with_stem(model, cfg, stem_width, depth) if stem == "conv" else model
    model = with_lsa(model) if spec.get("lsa") else model
    model = Pooled(model, cfg, pooling).eval() if pooling != "cls" else model.eval()
    fixture_cli.init_weights(model, g, "layernorm", ("cls_token", "position_embeddings", "temperature"))
    n_convs = len(stem_widths(cfg, stem_width, depth)) if stem == "conv" else 0
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    c = tformer_config(cfg, arch, stem_width, pooler, stem, pooling, spec.get("lsa", False), depth)
    json.dump(c, open(os.path.join(d, "config.json"), "w"), indent=2)
    save_file({tformer_name(k, n_convs): v.detach().contiguous() for k, v in model.state_dict().items()},
              os.path.join(d, "model.safetensors"))
    x = fixture_cli.save_image_inputs(d, cfg, spec, g, lambda x: reference(model, arch, x),
                                      lambda x: gradients(model, x, n_convs))
    print(f"wrote {d} (stem {stem_widths(cfg, stem_width, depth) if n_convs else 'patch'}, pooling {pooling}, "
          f"lsa {bool(spec.get('lsa'))}, transformers {transformers.__version__}; "
          f"inputs {', '.join(x)})")


def write_conv_case(out, name, B, C, H, W, O, K, stride, padding, bias, seed):
    g = torch.Generator().manual_seed(seed)
    t = {"x": torch.randn(B, C, H, W, generator=g), "weight": torch.randn(O, C, K, K, generator=g)}
    if bias:
        t["bias"] = torch.randn(O, generator=g)
    Ho, Wo = (H + 2 * padding - K) // stride + 1, (W + 2 * padding - K) // stride + 1
    t["r"] = torch.randn(B, O, Ho, Wo, generator=g)
    leaves = {k: v.double().requires_grad_(k != "r") for k, v in t.items()}
    y = nn.functional.conv2d(leaves["x"], leaves["weight"], leaves.get("bias"), stride=stride, padding=padding)
    (y * leaves["r"]).sum().backward()
    res = dict(t, out=y.detach().float())
    for k in ("x", "weight", "bias"):
        if k in leaves:
            res["grad_" + k] = leaves[k].grad.float()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    res["stride_padding"] = torch.tensor([stride, padding], dtype=torch.int64)
    save_file({k: v.contiguous() for k, v in res.items()}, os.path.join(d, "case.safetensors"))
    print(f"wrote {d}")


def random_case(r):
    n_head = r.randint(1, 3)
    patch = r.choice([2, 4, 8])
    cfg = dict(image_size=patch * r.randint(1, 4), patch_size=patch, num_channels=r.choice([1, 3]),
               hidden_size=n_head * r.randint(2, 6), num_hidden_layers=r.randint(1, 2), num_attention_heads=n_head,
               intermediate_size=r.randint(4, 24), hidden_act=r.choice(["gelu", "gelu_new", "relu", "silu"]),
               qkv_bias=r.random() < 0.7)
    arch = r.choice(list(ARCHS))
    spec = dict(B=r.randint(1, 3), pooler=r.random() < 0.5)
    if arch == "ViTForImageClassification":
        cfg["num_labels"] = r.randint(2, 8)
        spec["labels"] = r.random() < 0.5
        spec["pooling"] = r.choice(["cls", "mean", "seq"])
    spec["stem_depth"] = r.choice([1, 1, 2, 3])
    return arch, cfg, r.choice([0, 1, 3, 4]), spec


def main():
    def conv_cases(out):
        for name, *shape in CONV_CASES:
            write_conv_case(out, name, *shape, fixture_cli.case_seed(name))
    fixture_cli.run(CASES, write_case, random_case, extra=conv_cases)


if __name__ == "__main__":
    main()
