#!/usr/bin/env python3
"""PyTorch reference fixtures for `tformer torch-run` (tests/test_torch_fixtures.c).

Each case is a folder with config.json, weights.safetensors (the module's
state_dict), input.safetensors (forward() arguments and grad_output) and
expected.safetensors (output, attn_output_weights for attention, and
grad.<name> for every float input and every parameter: the gradient of
sum(output * grad_output)).

    python3 tests/ref/gen_torch_fixtures.py --out tests/fixtures          # committed set
    python3 tests/ref/gen_torch_fixtures.py --seed N --random-sizes --out DIR  # fresh set

The expected values are computed in float64 (from the float32 weights and
inputs) and rounded to float32: the exact answer, not PyTorch's float32
rounding, which on ill-conditioned cases differs from the truth by more than
the C side does. Needs torch (Debian's python3-torch or pip). safetensors files are written
here with the standard layout; the C reader is checked against the
safetensors library itself by tests/ref/gen_safetensors_fixtures.py.
"""
import argparse
import json
import os
import random

import torch
import torch.nn as nn

from torch_st import save_safetensors



class Sizes:
    """Odd, non-power-of-two sizes; --random-sizes draws them from the seed."""

    def __init__(self, rng, randomize):
        if randomize:
            self.H = rng.choice([1, 2, 3, 5])
            self.D = rng.choice([1, 3, 5, 7, 9, 6])
            # d_model <= 3 is degenerate for LayerNorm: with 1 or 2 values its
            # output is constant (+-1 up to eps) and every gradient through it is
            # rounding noise; with 3 the gradients are so cancelling that PyTorch's
            # own float32 answer misses the exact one by ~1e-4 (seen: 9.9e-5).
            while self.H * self.D <= 3:
                self.D = rng.choice([1, 3, 5, 7, 9, 6])
            self.B, self.T, self.S = rng.randint(1, 4), rng.randint(1, 9), rng.randint(1, 9)
            self.F = rng.randint(6, 40)  # a 3-unit MLP leaves gradients that are sums of a few cancelling terms
            self.kdim, self.vdim = rng.randint(1, 13), rng.randint(1, 13)
        else:
            self.H, self.D, self.B, self.T, self.S, self.F = 3, 5, 3, 5, 7, 19
            self.kdim, self.vdim = 7, 11
        self.E = self.H * self.D


def bool_mask(shape, g, p=0.3):
    m = torch.rand(shape, generator=g) < p
    m[..., 0] = False  # never a fully masked row: PyTorch gives NaN there
    return m


def float_mask(shape, g):
    m = torch.randn(shape, generator=g)
    hole = torch.rand(shape, generator=g) < 0.2
    hole[..., 0] = False
    return m.masked_fill(hole, float("-inf"))


def causal(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), 1)


def kpm(B, S, g, kind):
    if kind == "bool":
        return bool_mask((B, S), g, 0.35)
    return float_mask((B, S), g)


def randomize_(module, g):
    with torch.no_grad():
        for _, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.4)


def seq(z, B, T, E, bf, g):
    if B is None:
        return torch.randn(T, E, generator=g)
    return torch.randn((B, T, E) if bf else (T, B, E), generator=g)


def run_case(out_dir, name, module_name, cfg, module, inputs, g):
    module.train()  # dropout is 0; train mode keeps PyTorch off its inference fast paths
    randomize_(module, g)
    weights = {k: v.clone() for k, v in module.state_dict().items()}
    # The reference is computed in float64 from the float32 weights and inputs
    # (converted exactly) and rounded to float32 at the end: it is the exact
    # answer, so the C side's error is measured against the truth, not against
    # PyTorch's own float32 rounding.
    module.double()
    leaves = {}
    for k, v in inputs.items():
        if v.dtype == torch.float32:
            v = v.double().requires_grad_(True)
        leaves[k] = v
    if module_name == "MultiheadAttention":
        out, w = module(leaves["query"], leaves["key"], leaves["value"],
                        key_padding_mask=leaves.get("key_padding_mask"),
                        attn_mask=leaves.get("attn_mask"), need_weights=True)
    else:
        args = {k: v for k, v in leaves.items()}
        w = None
        out = module(**args)
    grad_output = torch.randn(out.shape, generator=g)
    (out * grad_output.double()).sum().backward()
    expected = {"output": out}
    if w is not None:
        expected["attn_output_weights"] = w
    for k, v in leaves.items():
        if v.dtype == torch.float64 and v.grad is not None:
            expected["grad." + k] = v.grad
    for k, p in module.named_parameters():
        expected["grad." + k] = p.grad if p.grad is not None else torch.zeros_like(p)
    expected = {k: v.float() for k, v in expected.items()}
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(dict(module=module_name, **cfg), f, indent=1)
    save_safetensors(os.path.join(d, "weights.safetensors"), weights)
    save_safetensors(os.path.join(d, "input.safetensors"), dict(inputs, grad_output=grad_output))
    save_safetensors(os.path.join(d, "expected.safetensors"), expected)


def mha_cases(z, g, bf):
    E, H, B, T, S = z.E, z.H, z.B, z.T, z.S
    base = dict(embed_dim=E, num_heads=H, batch_first=bf, dropout=0.0)
    cases = []
    x = seq(z, B, T, E, bf, g)
    cases.append(("self_nomask", base, dict(query=x, key=x.clone(), value=x.clone())))
    kv = dict(kdim=z.kdim, vdim=z.vdim)
    cases.append(("kvdim_boolkpm", dict(base, **kv),
                  dict(query=x, key=seq(z, B, S, z.kdim, bf, g), value=seq(z, B, S, z.vdim, bf, g),
                       key_padding_mask=kpm(B, S, g, "bool"))))
    mem = seq(z, B, S, E, bf, g)
    cases.append(("cross_boolattn_boolkpm", base,
                  dict(query=x, key=mem, value=mem.clone(), attn_mask=bool_mask((T, S), g),
                       key_padding_mask=kpm(B, S, g, "bool"))))
    cases.append(("cross_floatattn3d", base,
                  dict(query=x, key=mem, value=mem.clone(), attn_mask=float_mask((B * H, T, S), g))))
    cases.append(("cross_floatkpm", base,
                  dict(query=x, key=mem, value=mem.clone(), key_padding_mask=kpm(B, S, g, "float"))))
    cases.append(("cross_floatattn_boolkpm", base,
                  dict(query=x, key=mem, value=mem.clone(), attn_mask=float_mask((T, S), g),
                       key_padding_mask=kpm(B, S, g, "bool"))))
    cases.append(("self_causal_nobias", dict(base, bias=False),
                  dict(query=x, key=x.clone(), value=x.clone(), attn_mask=causal(T))))
    if bf:
        u = seq(z, None, T, E, bf, g)
        cases.append(("unbatched_kpm", base,
                      dict(query=u, key=u.clone(), value=u.clone(), key_padding_mask=bool_mask((T,), g))))
    out = []
    for name, cfg, inputs in cases:
        m = nn.MultiheadAttention(**cfg)
        out.append(("mha_" + name, "MultiheadAttention", cfg, m, inputs))
    return out


def layer_cfg(z, bf, nf, act):
    return dict(d_model=z.E, nhead=z.H, dim_feedforward=z.F, dropout=0.0, activation=act,
                layer_norm_eps=1e-5, batch_first=bf, norm_first=nf)


def encoder_masks(z, g, variant):
    B, T = z.B, z.T
    return [dict(src_mask=causal(T), src_key_padding_mask=kpm(B, T, g, "bool")),
            dict(src_mask=float_mask((T, T), g)),
            dict(),
            dict(src_key_padding_mask=kpm(B, T, g, "float"))][variant % 4]


def decoder_masks(z, g, variant):
    B, T, S = z.B, z.T, z.S
    return [dict(tgt_mask=causal(T), memory_key_padding_mask=kpm(B, S, g, "bool")),
            dict(tgt_mask=float_mask((T, T), g), memory_mask=float_mask((T, S), g)),
            dict(tgt_key_padding_mask=kpm(B, T, g, "bool"), memory_mask=bool_mask((T, S), g)),
            dict()][variant % 4]


def layer_cases(z, g, bf):
    out = []
    variant = 0
    for nf in (False, True):
        for act in ("relu", "gelu"):
            cfg = layer_cfg(z, bf, nf, act)
            tag = f"{'pre' if nf else 'post'}_{act}_v{variant}"
            src = seq(z, z.B, z.T, z.E, bf, g)
            m = nn.TransformerEncoderLayer(**cfg)
            out.append(("enclayer_" + tag, "TransformerEncoderLayer", cfg, m,
                        dict(src=src, **encoder_masks(z, g, variant))))
            tgt, mem = seq(z, z.B, z.T, z.E, bf, g), seq(z, z.B, z.S, z.E, bf, g)
            m = nn.TransformerDecoderLayer(**cfg)
            out.append(("declayer_" + tag, "TransformerDecoderLayer", cfg, m,
                        dict(tgt=tgt, memory=mem, **decoder_masks(z, g, variant))))
            variant += 1
    return out


def stack_cases(z, g, bf):
    out = []
    for i, with_norm in enumerate((False, True)):
        cfg = layer_cfg(z, bf, bool(i), "gelu" if i else "relu")
        norm = nn.LayerNorm(z.E) if with_norm else None
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(**cfg), num_layers=2, norm=norm,
                                    enable_nested_tensor=False)
        m = encoder_masks(z, g, i)
        if "src_mask" in m:
            m["mask"] = m.pop("src_mask")
        out.append((f"encoder_norm{int(with_norm)}", "TransformerEncoder", dict(cfg, num_layers=2), enc,
                    dict(src=seq(z, z.B, z.T, z.E, bf, g), **m)))
        norm = nn.LayerNorm(z.E) if with_norm else None
        dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(**cfg), num_layers=2, norm=norm)
        out.append((f"decoder_norm{int(with_norm)}", "TransformerDecoder", dict(cfg, num_layers=2), dec,
                    dict(tgt=seq(z, z.B, z.T, z.E, bf, g), memory=seq(z, z.B, z.S, z.E, bf, g),
                         **decoder_masks(z, g, i))))
    for nf in (False, True):
        cfg = dict(d_model=z.E, nhead=z.H, num_encoder_layers=2, num_decoder_layers=1,
                   dim_feedforward=z.F, dropout=0.0, activation="gelu" if nf else "relu",
                   batch_first=bf, norm_first=nf)
        t = nn.Transformer(**cfg)
        B, T, S = z.B, z.T, z.S
        inputs = dict(src=seq(z, B, S, z.E, bf, g), tgt=seq(z, B, T, z.E, bf, g), tgt_mask=causal(T),
                      src_key_padding_mask=kpm(B, S, g, "bool"),
                      memory_key_padding_mask=kpm(B, S, g, "bool"))
        if nf:
            inputs["src_mask"] = bool_mask((S, S), g)
            inputs["memory_mask"] = bool_mask((T, S), g)
        out.append((f"transformer_{'pre' if nf else 'post'}", "Transformer", cfg, t, inputs))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--random-sizes", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(a.seed)
    n = 0
    for bf in (False, True):
        z = Sizes(rng, a.random_sizes)
        for name, mod_name, cfg, module, inputs in mha_cases(z, g, bf) + layer_cases(z, g, bf) + stack_cases(z, g, bf):
            run_case(a.out, f"{name}_bf{int(bf)}", mod_name, cfg, module, inputs, g)
            n += 1
    print(f"wrote {n} cases to {a.out} (seed {a.seed}, sizes: {'random' if a.random_sizes else 'fixed'})")


if __name__ == "__main__":
    main()
