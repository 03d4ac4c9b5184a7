#!/usr/bin/env python3
"""Fixtures for `tformer torch-run` on continual-inference's modules
(PyPI continual-inference 1.2.4): continual.RetroactiveMultiheadAttention,
continual.SingleOutputMultiheadAttention and continual.TransformerEncoder.

Each case folder holds config.json (the constructor's arguments),
weights.safetensors (the module's state_dict, continual-inference's names),
input.safetensors and expected.safetensors: `output`, what forward_steps over
the whole stream should return, computed the regular way — window by window
with torch.nn.MultiheadAttention / torch.nn.TransformerEncoderLayer carrying
the same weights, in float64 from the float32 weights and inputs.

It also runs continual-inference's own forward_steps (float64 and float32) on
each case and prints its relative error against that regular answer: the
numbers quoted in docs/continual.md.

    build/hfvenv/bin/python tests/ref/gen_continual_fixtures.py --out tests/fixtures
"""
import argparse
import json
import os
import sys

import torch
import torch.nn as nn
import continual as co

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_torch_fixtures import save_safetensors  # noqa: E402


def rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def regular_mha(sd, E, H, x, n, retro):
    """x (B,T,E) float64 -> (B,T-n+1,n,E) or (B,T-n+1,E), each window on its own."""
    m = nn.MultiheadAttention(E, H, batch_first=True).double()
    m.load_state_dict({k: v.double() for k, v in sd.items()})
    outs = []
    for t in range(n - 1, x.shape[1]):
        w = x[:, t - n + 1:t + 1]
        y = m(w, w, w, need_weights=False)[0]
        outs.append(y if retro else y[:, -1])
    return torch.stack(outs, 1)


def torch_layer_state(sd, prefix, retro):
    """continual-inference's names of one layer -> nn.TransformerEncoderLayer's."""
    if retro:
        ln, ff = prefix + "1.fn.", prefix + "1.fn._ff_block.fn."
        ln1, ln2 = ln + "norm1.", ln + "norm2."
        attn = prefix + "0.self_attn."
    else:
        ln1, ln2 = prefix + "1.norm1.fn.", prefix + "1.norm2.fn."
        ff, attn = prefix + "1._ff_block.1.", prefix + "0.self_attn."
    out = {}
    for k in ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"):
        out["self_attn." + k] = sd[attn + k]
    for a, b in (("linear1", "linear1"), ("linear2", "linear2")):
        for p in ("weight", "bias"):
            out[f"{a}.{p}"] = sd[f"{ff}{b}.{p}"]
    for a, b in (("norm1", ln1), ("norm2", ln2)):
        for p in ("weight", "bias"):
            out[f"{a}.{p}"] = sd[b + p]
    return out


def regular_encoder(sd, cfg, x, L):
    """x (B,C,T) float64 -> (B,C,T-n+1): the regular stack on each window, last position."""
    n = cfg["sequence_len"]
    prefixes = ["layers.0."] if L == 1 else ["layers.0.", "layers.1.fn."]
    layers = []
    for i, p in enumerate(prefixes):
        lay = nn.TransformerEncoderLayer(cfg["d_model"], cfg["nhead"], cfg["dim_feedforward"], 0.0,
                                         cfg["activation"], cfg["layer_norm_eps"], batch_first=True).double()
        lay.load_state_dict({k: v.double() for k, v in torch_layer_state(sd, p, L == 2 and i == 0).items()})
        layers.append(lay.eval())
    xs = x.transpose(1, 2)  # (B,T,C)
    outs = []
    for t in range(n - 1, xs.shape[1]):
        h = xs[:, t - n + 1:t + 1]
        for lay in layers:
            h = lay(h)
        outs.append(h[:, -1])
    return torch.stack(outs, 2)  # (B,C,T-n+1)


def write_case(out, name, cfg, sd, inputs, expected):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    save_safetensors(os.path.join(d, "weights.safetensors"), {k: v.float() for k, v in sd.items()})
    save_safetensors(os.path.join(d, "input.safetensors"), {k: v.float() for k, v in inputs.items()})
    save_safetensors(os.path.join(d, "expected.safetensors"), {"output": expected.float()})


def steps_error(module, x, ref, dtype):
    m = module.to(dtype)
    with torch.no_grad():
        y = m.forward_steps(x.to(dtype))
    m.clean_state()
    return rel(y, ref)


def attention_cases(out, g):
    E, H, n, T, B = 6, 2, 4, 11, 2
    for kind, cls in (("retro", co.RetroactiveMultiheadAttention), ("single", co.SingleOutputMultiheadAttention)):
        for scale in (1.0, 30.0):
            torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=g)))
            m = cls(E, H, batch_first=True, sequence_len=n)
            with torch.no_grad():
                m.in_proj_weight[:2 * E] *= scale  # large scores: q and k rows
                m.in_proj_bias.normal_(0, 0.5)
                m.out_proj.bias.normal_(0, 0.5)
            sd = {k: v.detach().clone() for k, v in m.state_dict().items()}
            x = torch.randn(B, T, E, generator=g)
            ref = regular_mha(sd, E, H, x.double(), n, kind == "retro")
            e64, e32 = steps_error(m, x, ref, torch.float64), steps_error(m, x, ref, torch.float32)
            name = f"co_{kind}{'_large' if scale > 1 else ''}"
            print(f"{name}: continual-inference forward_steps vs regular: float64 {e64:.3g}, float32 {e32:.3g}")
            cfg = {"module": "continual." + cls.__name__, "embed_dim": E, "num_heads": H, "batch_first": True,
                   "sequence_len": n, "dropout": 0.0, "bias": True}
            write_case(out, name, cfg, sd, {"query": x}, ref)


def encoder_cases(out, g):
    d, H, F, n, T, B = 6, 2, 10, 4, 11, 2
    for L in (1, 2):
        for act in ("relu", "gelu"):
            torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=g)))
            cfg = {"d_model": d, "nhead": H, "dim_feedforward": F, "dropout": 0.0, "activation": act,
                   "layer_norm_eps": 1e-5, "sequence_len": n}
            f = co.TransformerEncoderLayerFactory(**cfg)
            enc = co.TransformerEncoder(f, num_layers=L)
            with torch.no_grad():
                for k, v in enc.state_dict().items():
                    if k.endswith("bias") or "norm" in k:
                        v.add_(torch.randn(v.shape, generator=g) * 0.3)
            sd = {k: v.detach().clone() for k, v in enc.state_dict().items()}
            x = torch.randn(B, d, T, generator=g)
            ref = regular_encoder(sd, cfg, x.double(), L)
            e64, e32 = steps_error(enc, x, ref, torch.float64), steps_error(enc, x, ref, torch.float32)
            name = f"co_encoder_l{L}_{act}"
            print(f"{name}: continual-inference forward_steps vs regular: float64 {e64:.3g}, float32 {e32:.3g}")
            cfg = {"module": "continual.TransformerEncoder", **cfg, "num_layers": L}
            write_case(out, name, cfg, sd, {"input": x}, ref)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures")
    ap.add_argument("--seed", type=int, default=15)
    a = ap.parse_args()
    g = torch.Generator().manual_seed(a.seed)
    attention_cases(a.out, g)
    encoder_cases(a.out, g)


if __name__ == "__main__":
    main()
