#!/usr/bin/env python3
"""ViViT folders and their outputs, and PyTorch's tubelet embedding, for
tests/test_vivit.c.

    python tests/ref/gen_vivit_fixtures.py --out tests/fixtures_vivit
        the committed cases (transformers 4.36.2 over torch 1.13, build/hfvenv)

    python tests/ref/gen_vivit_fixtures.py --random 8 --seed 1234 --out build/vivit_fresh
        fresh random configurations and inputs (make vivit-conformance)

Model 1 cases (model_type "vivit") are Hugging Face's VivitModel /
VivitForVideoClassification as save_pretrained writes them: ViViT's joint
spatio-temporal model with tubelet embedding (tubelet_size [1, h, w] is
uniform frame sampling). Models 2 and 3 are not in transformers: their
reference here is assembled from transformers' own Vivit modules
(VivitTubeletEmbeddings, VivitEncoder, VivitAttention, VivitIntermediate,
VivitOutput) following the paper (Arnab et al. 2021, Sec. 3.3) and Scenic's
layout, and saved as tformer's "tformer-vivit" folders:
  Model 2, factorised encoder: per frame group [cls_s; tubes] + pos_s,
    VivitEncoder, LayerNorm; the class tokens' states [cls_t; h_1..h_F] +
    pos_t, a second VivitEncoder, LayerNorm; classifier on its class token.
  Model 3, factorised self-attention: tubes + pos (no class token); each
    block: x += Attn_s(LN(x)) within each frame group, x += Attn_t(LN(x))
    across groups at each place, x += MLP(LN(x)); LayerNorm; classifier on
    the mean over tokens.

A case is a folder: config.json, model.safetensors, input.safetensors
(pixel_values float32 (B,T,C,H,W), labels int64 for some classifier cases)
and expected.safetensors (last_hidden_state, pooler_output with a pooler,
logits, loss with labels), computed in float64 from the float32 weights and
rounded once; with labels also gradients.safetensors: the loss's gradient
with respect to pixel_values and every parameter, by name, the same way. Weights: LayerNorms N(1, 0.2) / N(0, 0.05), class tokens and
positions N(0, 1), every other tensor N(0, 0.4); pixels U(0, 1).

A tubelet case (tubelet_*) holds case.safetensors: x (B,T,C,H,W), weight
(D,C,t,h,w), bias (D), r (B,N,D), out = conv3d(x.permute(0,2,1,3,4), weight,
bias, stride=(t,h,w)).flatten(2).transpose(1,2) and the gradients of
sum(out * r): grad_x, grad_weight, grad_bias, in float64, rounded once.
"""
import copy
import json
import os
import shutil

import torch
import transformers
from safetensors.torch import save_file
from torch import nn
from transformers import VivitConfig, VivitForVideoClassification, VivitModel
from transformers.models.vivit.modeling_vivit import (VivitAttention, VivitEncoder, VivitIntermediate, VivitOutput,
                                                      VivitTubeletEmbeddings)

import fixture_cli
from fixture_cli import init_weights  # the same weights' distributions as the ViT cases

ARCHS = {"VivitModel": VivitModel, "VivitForVideoClassification": VivitForVideoClassification}


# ------------------------------------------------------------------ Models 2 and 3 from transformers' modules

class Tokens(nn.Module):
    """A class token (optional) and learned positions."""

    def __init__(self, cfg, tokens, cls, tubelets=False):
        super().__init__()
        if cls:
            self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.hidden_size))
        self.position_embeddings = nn.Parameter(torch.zeros(1, tokens + cls, cfg.hidden_size))
        if tubelets:
            self.patch_embeddings = VivitTubeletEmbeddings(cfg)

    def forward(self, x):
        if hasattr(self, "cls_token"):
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        return x + self.position_embeddings


class FactorisedLayer(nn.Module):
    """Model 3's block: spatial, then temporal self-attention, then the MLP (pre-LN)."""

    def __init__(self, cfg, frames):
        super().__init__()
        self.frames = frames
        self.attention = VivitAttention(cfg)
        self.temporal_attention = VivitAttention(cfg)
        self.intermediate = VivitIntermediate(cfg)
        self.output = VivitOutput(cfg)
        self.layernorm_before = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.layernorm_temporal = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.layernorm_after = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, x):
        B, N, D = x.shape
        F = self.frames
        S = N // F
        xs = x.reshape(B * F, S, D)
        xs = xs + self.attention(self.layernorm_before(xs))[0]
        xt = xs.reshape(B, F, S, D).transpose(1, 2).reshape(B * S, F, D)
        xt = xt + self.temporal_attention(self.layernorm_temporal(xt))[0]
        x = xt.reshape(B, S, F, D).transpose(1, 2).reshape(B, N, D)
        return self.output(self.intermediate(self.layernorm_after(x)), x)


class FactorisedEncoderLayers(nn.Module):
    def __init__(self, cfg, frames):
        super().__init__()
        self.layer = nn.ModuleList([FactorisedLayer(cfg, frames) for _ in range(cfg.num_hidden_layers)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


def groups(cfg):
    t, h, w = cfg.tubelet_size
    return cfg.num_frames // t, (cfg.image_size // h) * (cfg.image_size // w)


class Body(nn.Module):
    """tformer's Models 2 and 3 under tformer's names."""

    def __init__(self, cfg, kind, n_temporal, pooler):
        super().__init__()
        self.kind = kind
        F, S = groups(cfg)
        D = cfg.hidden_size
        self.embeddings = Tokens(cfg, S if kind == 2 else F * S, kind == 2, tubelets=True)
        if kind == 2:
            self.encoder = VivitEncoder(cfg)
            tcfg = copy.deepcopy(cfg)
            tcfg.num_hidden_layers = n_temporal
            self.temporal_embeddings = Tokens(cfg, F, True)
        else:
            self.encoder = FactorisedEncoderLayers(cfg, F)
        self.layernorm = nn.LayerNorm(D, eps=cfg.layer_norm_eps)
        if kind == 2:
            self.temporal_encoder = VivitEncoder(tcfg)
            self.temporal_layernorm = nn.LayerNorm(D, eps=cfg.layer_norm_eps)
        if pooler:
            self.pooler = nn.Sequential()
            self.pooler.dense = nn.Linear(D, D)

    def forward(self, pixel_values):
        B = pixel_values.shape[0]
        p = self.embeddings.patch_embeddings(pixel_values)  # (B, F*S, D), time-major
        if self.kind == 3:
            h = self.layernorm(self.encoder(self.embeddings(p)))
        else:
            F = self.temporal_embeddings.position_embeddings.shape[1] - 1
            s = self.encoder(self.embeddings(p.reshape(B * F, -1, p.shape[2]))).last_hidden_state
            s = self.layernorm(s)[:, 0].reshape(B, F, -1)
            h = self.temporal_layernorm(self.temporal_encoder(self.temporal_embeddings(s)).last_hidden_state)
        pooled = torch.tanh(self.pooler.dense(h[:, 0])) if hasattr(self, "pooler") else None
        return h, pooled


class Classifier(nn.Module):
    def __init__(self, cfg, kind, n_temporal):
        super().__init__()
        self.kind = kind
        self.vivit = Body(cfg, kind, n_temporal, False)
        self.classifier = nn.Linear(cfg.hidden_size, cfg.num_labels)

    def forward(self, pixel_values):
        h, _ = self.vivit(pixel_values)
        return self.classifier(h.mean(dim=1) if self.kind == 3 else h[:, 0])


def tformer_config(cfg, arch, kind, n_temporal, pooler):
    t, h, w = cfg.tubelet_size
    act = {"gelu_fast": "gelu_fast", "gelu_new": "gelu_fast", "gelu_pytorch_tanh": "gelu_fast"}.get(cfg.hidden_act,
                                                                                                      cfg.hidden_act)
    c = dict(model_type="tformer-vivit", architectures=[arch], image_size=cfg.image_size, num_frames=cfg.num_frames,
             channels=cfg.num_channels, tubelet_t=t, tubelet_h=h, tubelet_w=w, embedding="tubelet", model_kind=kind,
             n_layer=cfg.num_hidden_layers, n_layer_temporal=n_temporal, n_head=cfg.num_attention_heads,
             d_model=cfg.hidden_size, d_ff=cfg.intermediate_size, activation=act, norm_eps=cfg.layer_norm_eps,
             qkv_bias=cfg.qkv_bias, head=arch, n_labels=cfg.num_labels, pooler=pooler)
    return c


# ------------------------------------------------------------------ cases

# (name, architecture, model kind, VivitConfig keywords, spec)
CASES = [
    ("m1_model_grey16_t2p4", "VivitModel", 1,
     dict(image_size=16, num_frames=4, tubelet_size=[2, 4, 4], num_channels=1, hidden_size=16, num_hidden_layers=2,
          num_attention_heads=2, intermediate_size=24),
     dict(B=2)),
    ("m1_cls_rgb12_t3x4x3_labels", "VivitForVideoClassification", 1,
     dict(image_size=12, num_frames=6, tubelet_size=[3, 4, 3], num_channels=3, hidden_size=12, num_hidden_layers=2,
          num_attention_heads=3, intermediate_size=20, num_labels=5, hidden_act="gelu",
          id2label={0: "up", 1: "down", 2: "left", 3: "right", 4: "still"}),
     dict(B=3, labels=True)),
    ("m1_cls_grey13_frames_leftover", "VivitForVideoClassification", 1,
     dict(image_size=13, num_frames=5, tubelet_size=[1, 4, 4], num_channels=1, hidden_size=10, num_hidden_layers=1,
          num_attention_heads=5, intermediate_size=8, num_labels=3, qkv_bias=False, hidden_act="relu",
          layer_norm_eps=1e-12),
     dict(B=2)),
    ("m1_model_grey10_t2p5_nopooler", "VivitModel", 1,
     dict(image_size=10, num_frames=5, tubelet_size=[2, 5, 5], num_channels=1, hidden_size=8, num_hidden_layers=2,
          num_attention_heads=2, intermediate_size=12, hidden_act="silu"),
     dict(B=2, pooler=False)),
    ("m2_cls_grey12_t2p4_labels", "VivitForVideoClassification", 2,
     dict(image_size=12, num_frames=4, tubelet_size=[2, 4, 4], num_channels=1, hidden_size=12, num_hidden_layers=2,
          num_attention_heads=2, intermediate_size=16, num_labels=4),
     dict(B=3, labels=True, temporal=2)),
    ("m2_model_rgb8_frames", "VivitModel", 2,
     dict(image_size=8, num_frames=3, tubelet_size=[1, 4, 4], num_channels=3, hidden_size=8, num_hidden_layers=1,
          num_attention_heads=2, intermediate_size=10),
     dict(B=2, temporal=1)),
    ("m3_cls_grey12_t2p4", "VivitForVideoClassification", 3,
     dict(image_size=12, num_frames=6, tubelet_size=[2, 4, 4], num_channels=1, hidden_size=12, num_hidden_layers=2,
          num_attention_heads=3, intermediate_size=16, num_labels=3),
     dict(B=2, labels=True)),
    ("m3_model_grey9_frames_leftover", "VivitModel", 3,
     dict(image_size=9, num_frames=3, tubelet_size=[1, 4, 3], num_channels=1, hidden_size=8, num_hidden_layers=2,
          num_attention_heads=1, intermediate_size=12, qkv_bias=False, hidden_act="gelu"),
     dict(B=2, pooler=False)),
]

# (name, B, T, C, H, W, D, t, h, w)
TUBELET_CASES = [
    ("tubelet_rgb_5x9x11_t2x4x3", 2, 5, 3, 9, 11, 5, 2, 4, 3),
    ("tubelet_grey_frames_8x8_p4", 2, 3, 1, 8, 8, 6, 1, 4, 4),
]


def build(arch, kind, cfg, spec):
    if kind == 1:
        kw = {"add_pooling_layer": spec.get("pooler", True)} if arch == "VivitModel" else {}
        return ARCHS[arch](cfg, **kw)
    if arch == "VivitModel":
        return Body(cfg, kind, spec.get("temporal", 1), spec.get("pooler", kind == 2))
    return Classifier(cfg, kind, spec.get("temporal", 1))


def reference(model, arch, kind, x):
    """The outputs in float64 from the float32 weights, rounded once."""
    m = copy.deepcopy(model).double().eval()
    px = x["pixel_values"].double()
    res = {}
    with torch.no_grad():
        if kind == 1:
            args = {"pixel_values": px}
            if "labels" in x:
                args["labels"] = x["labels"]
            out = m(**args)
            if arch == "VivitModel":
                res["last_hidden_state"] = out.last_hidden_state
                if out.pooler_output is not None:
                    res["pooler_output"] = out.pooler_output
            else:
                res["logits"] = out.logits
                if out.loss is not None:
                    res["loss"] = out.loss.reshape(())
        elif arch == "VivitModel":
            h, pooled = m(px)
            res["last_hidden_state"] = h
            if pooled is not None:
                res["pooler_output"] = pooled
        else:
            res["logits"] = m(px)
            if "labels" in x:
                res["loss"] = nn.functional.cross_entropy(res["logits"], x["labels"]).reshape(())
    return {k: v.float().contiguous() for k, v in res.items()}


def gradients(model, kind, x):
    """The loss's gradients with respect to pixel_values and every parameter (by
    tformer's names), float64 from the float32 weights, rounded once."""
    m = copy.deepcopy(model).double().train()  # dropout is 0
    pixels = x["pixel_values"].double().requires_grad_(True)
    if kind == 1:
        loss = m(pixel_values=pixels, labels=x["labels"]).loss
    else:
        loss = nn.functional.cross_entropy(m(pixels), x["labels"])
    loss.backward()
    res = {"pixel_values": pixels.grad.float()}
    res.update({k: p.grad.float().contiguous() for k, p in m.named_parameters()})
    return res


def write_case(out, name, arch, kind, cfg_kw, spec, seed):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    cfg = VivitConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **cfg_kw)
    model = build(arch, kind, cfg, spec).eval()
    init_weights(model, g, "layernorm", ("cls_token", "position_embeddings"))
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    if kind == 1:
        model.save_pretrained(d, safe_serialization=True)
    else:
        os.makedirs(d)
        pooler = arch == "VivitModel" and spec.get("pooler", kind == 2)
        c = tformer_config(cfg, arch, kind, spec.get("temporal", 1), pooler)
        if arch == "VivitForVideoClassification" and cfg_kw.get("id2label"):
            c["id2label"] = {str(k): v for k, v in cfg.id2label.items()}
        json.dump(c, open(os.path.join(d, "config.json"), "w"), indent=2)
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()},
                  os.path.join(d, "model.safetensors"))
    B, T, C, S = spec["B"], cfg.num_frames, cfg.num_channels, cfg.image_size
    x = {"pixel_values": torch.rand(B, T, C, S, S, generator=g)}
    if spec.get("labels"):
        x["labels"] = torch.randint(0, cfg.num_labels, (B,), generator=g)
    save_file(x, os.path.join(d, "input.safetensors"))
    save_file(reference(model, arch, kind, x), os.path.join(d, "expected.safetensors"))
    if spec.get("labels"):
        save_file(gradients(model, kind, x), os.path.join(d, "gradients.safetensors"))
    print(f"wrote {d} (model {kind}, transformers {transformers.__version__}; inputs {', '.join(x)})")


def write_tubelet_case(out, name, B, T, C, H, W, D, t, h, w, seed):
    g = torch.Generator().manual_seed(seed)
    v = {"x": torch.randn(B, T, C, H, W, generator=g), "weight": torch.randn(D, C, t, h, w, generator=g),
         "bias": torch.randn(D, generator=g)}
    N = (T // t) * (H // h) * (W // w)
    v["r"] = torch.randn(B, N, D, generator=g)
    leaves = {k: a.double().requires_grad_(k != "r") for k, a in v.items()}
    y = nn.functional.conv3d(leaves["x"].permute(0, 2, 1, 3, 4), leaves["weight"], leaves["bias"],
                             stride=(t, h, w)).flatten(2).transpose(1, 2)
    (y * leaves["r"]).sum().backward()
    res = dict(v, out=y.detach().float())
    for k in ("x", "weight", "bias"):
        res["grad_" + k] = leaves[k].grad.float()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    save_file({k: a.contiguous() for k, a in res.items()}, os.path.join(d, "case.safetensors"))
    print(f"wrote {d}")


def random_case(r):
    n_head = r.randint(1, 3)
    t, h, w = r.choice([1, 1, 2, 3]), r.choice([2, 3, 4]), r.choice([2, 3, 4])
    image = max(h, w) * r.randint(1, 3) + r.choice([0, 0, 1])
    cfg = dict(image_size=image, num_frames=t * r.randint(1, 3) + r.choice([0, 0, 1]) if t > 1 else r.randint(1, 4),
               tubelet_size=[t, h, w], num_channels=r.choice([1, 3]),
               hidden_size=n_head * r.randint(max(2, -(-6 // n_head)), 6), num_hidden_layers=r.randint(1, 2),
               num_attention_heads=n_head, intermediate_size=r.randint(4, 24),
               hidden_act=r.choice(["gelu", "gelu_fast", "relu", "silu", "gelu_new"]), qkv_bias=r.random() < 0.7,
               layer_norm_eps=r.choice([1e-12, 1e-6, 1e-5]))
    kind = r.choice([1, 1, 2, 3])
    arch = r.choice(list(ARCHS))
    spec = dict(B=r.randint(1, 3), pooler=kind != 3 and r.random() < 0.7, temporal=r.randint(1, 2))
    if arch == "VivitForVideoClassification":
        cfg["num_labels"] = r.randint(2, 8)
        spec["labels"] = r.random() < 0.5
    return arch, kind, cfg, spec


def main():
    def tubelet_cases(out):
        for name, *shape in TUBELET_CASES:
            write_tubelet_case(out, name, *shape, fixture_cli.case_seed(name))
    fixture_cli.run(CASES, write_case, random_case, extra=tubelet_cases)


if __name__ == "__main__":
    main()
