#!/usr/bin/env python3
"""Scalable-Softmax attention (Nakanishi 2025, "Scalable-Softmax Is Superior
for Attention"; tformer's `ssmax`) in PyTorch, for tests/test_ssmax.c.

    python tests/ref/gen_ssmax_fixtures.py --out tests/fixtures_ssmax
        the committed cases
    python tests/ref/gen_ssmax_fixtures.py --random 8 --seed 1 --out build/ssmax_fresh
        fresh random shapes, paddings and settings

The layer is torch.nn.MultiheadAttention (batch_first; its in_proj and
out_proj give q, k, v and the output, and its own forward() gives the
reference for s ln n = 1 below), with the softmax replaced by SSMax: head
h's scores of query i, q k^T / sqrt(D), are multiplied by s[h] ln n_i before
the masks are added, n_i the keys query i sees (not padded; with causal
masking not after it; with lsa not its own), ln 1 = 0 for a lone key:

    softmax(s[h] ln(n_i) q_i k_j^T / sqrt(D) + mask_ij)

With lsa (Lee et al. 2021, tformer's other option) each head's scores are
also multiplied by temperature[h] and each query's own key is -inf.

Each case is a folder holding case.safetensors: x (B,T,E), in_proj_weight
(3E,E), in_proj_bias (3E), out_proj.weight (E,E), out_proj.bias (E),
ssmax_scale (H), temperature (H) with lsa, padding (B,T) uint8 (1 = padded
key), r (B,T,E), out (B,T,E), grad_<name> of sum(out * r) for x and every
weight, size_grad_ssmax_scale (H: the sum of |terms| of s's gradient, which
cancels: the test's error for it is relative to this size), and spec (3) float32 [n_head, causal, lsa] (kept out of the file's
metadata, whose order changes from one run to the next). Weights N(0, 0.4)
(N(0, 0.02) would give nearly uniform attention, which would not notice a
wrong n), s U(0.3, 1.2), temperatures U(0.5, 1.5); the arithmetic in float64
from the float32 values, rounded once. The check below also runs each case
with s = 1 / ln n on an unpadded, non-causal input against
torch.nn.MultiheadAttention's own forward(): the SSMax arithmetic here then
is PyTorch's attention.
"""
import math
import os

import torch
from safetensors.torch import save_file
from torch import nn

import fixture_cli

# (name, B, T, E, H, paddings (keys padded at the end of each row), causal, lsa)
CASES = [
    ("full_pad", 3, 7, 8, 2, (0, 3, 5), False, False),
    ("causal_pad", 2, 6, 12, 3, (2, 0), True, False),
    ("full_lsa_pad", 2, 5, 8, 2, (1, 0), False, True),
    ("full_one_head", 1, 9, 6, 1, (0,), False, False),
]


def visible(B, T, padding, causal, lsa):
    """(B,T,T) bool: query i of row b sees key j."""
    keys = torch.ones(B, T, dtype=torch.bool)
    for b, p in enumerate(padding):
        if p:
            keys[b, T - p:] = False
    v = keys[:, None, :].expand(B, T, T).clone()
    if causal:
        v &= torch.tril(torch.ones(T, T, dtype=torch.bool))
    if lsa:
        v &= ~torch.eye(T, dtype=torch.bool)
    return v


def ssmax_attention(x, w, H, seen, lsa, keep=None):
    """SSMax multi-head attention of x (B,T,E) float64 with the weights w;
    keep (a dict) receives the scores (grad retained) and what s multiplies."""
    B, T, E = x.shape
    D = E // H
    q, k, v = (x @ w["in_proj_weight"].T + w["in_proj_bias"]).split(E, dim=-1)
    q, k, v = (t.reshape(B, T, H, D).transpose(1, 2) for t in (q, k, v))      # (B,H,T,D)
    n = seen.sum(-1).clamp(min=1).to(x.dtype)                                   # (B,T)
    factor = w["ssmax_scale"].reshape(1, H, 1, 1) * n.log()[:, None, :, None]   # (B,H,T,1)
    if lsa:
        factor = factor * w["temperature"].reshape(1, H, 1, 1)
    scores = (q * factor) @ k.transpose(-1, -2) / math.sqrt(D)                  # (B,H,T,T)
    scores = scores.masked_fill(~seen[:, None], float("-inf"))
    if keep is not None:
        scores.retain_grad()
        per_s = factor / w["ssmax_scale"].reshape(1, H, 1, 1)                   # (B,H,T,1)
        keep.update(scores=scores, per_s=(per_s * q @ k.transpose(-1, -2) / math.sqrt(D)).detach())
    o = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, E)
    return o @ w["out_proj.weight"].T + w["out_proj.bias"]


def check_against_torch(w, H, x):
    """s = 1 / ln T without masks: SSMax is then nn.MultiheadAttention's own attention."""
    B, T, E = x.shape
    mha = nn.MultiheadAttention(E, H, batch_first=True).double()
    with torch.no_grad():
        for name in ("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"):
            mha.get_parameter(name).copy_(w[name])
    want, _ = mha(x, x, x, need_weights=False)
    one = dict(w, ssmax_scale=torch.full((H,), 1.0 / math.log(T), dtype=torch.float64))
    got = ssmax_attention(x, one, H, visible(B, T, (0,) * B, False, False), False)
    err = (got - want).abs().max().item()
    assert err < 1e-10, f"SSMax with s ln n = 1 is not PyTorch's attention: {err}"


def write_case(out_dir, name, B, T, E, H, padding, causal, lsa, seed):
    g = torch.Generator().manual_seed(seed)
    f32 = lambda *s, std=1.0: (std * torch.randn(*s, generator=g)).float()  # noqa: E731
    w = {"in_proj_weight": f32(3 * E, E, std=0.4), "in_proj_bias": f32(3 * E, std=0.4),
         "out_proj.weight": f32(E, E, std=0.4), "out_proj.bias": f32(E, std=0.4),
         "ssmax_scale": (0.3 + 0.9 * torch.rand(H, generator=g)).float()}
    if lsa:
        w["temperature"] = (0.5 + torch.rand(H, generator=g)).float()
    x, r = f32(B, T, E), f32(B, T, E)
    leaves = {k: v.double().requires_grad_(True) for k, v in dict(w, x=x).items()}
    check_against_torch({k: v.detach() for k, v in leaves.items()}, H, x.double())
    seen = visible(B, T, padding, causal, lsa)
    keep = {}
    out = ssmax_attention(leaves["x"], leaves, H, seen, lsa, keep)
    (out * r.double()).sum().backward()
    # s[h]'s gradient is a sum over (b, i, j) of d scores * scores / s, which cancels (a softmax's gradient sums
    # to 0 over j): its float32 rounding scales with the sum of the terms' sizes, not with the sum itself
    terms = (keep["scores"].grad * keep["per_s"]).masked_fill(~seen[:, None], 0.0)   # (B,H,T,T)
    size_ssmax = terms.abs().sum((0, 2, 3))                                           # (H)
    pad = torch.zeros(B, T, dtype=torch.uint8)
    for b, p in enumerate(padding):
        if p:
            pad[b, T - p:] = 1
    t = dict(w, x=x, r=r, out=out.detach().float(), padding=pad,
             spec=torch.tensor([H, int(causal), int(lsa)], dtype=torch.float32))
    t.update({"grad_" + k: v.grad.float() for k, v in leaves.items()})
    t["size_grad_ssmax_scale"] = size_ssmax.float()
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    save_file({k: v.contiguous() for k, v in t.items()}, os.path.join(d, "case.safetensors"))
    print(f"wrote {d} (B {B}, T {T}, E {E}, H {H}, padding {padding}, causal {causal}, lsa {lsa}; "
          f"torch {torch.__version__})")


def random_case(r):
    H = r.randint(1, 3)
    B, T = r.randint(1, 3), r.randint(3, 10)
    causal = r.random() < 0.5
    lsa = not causal and r.random() < 0.3  # lsa hides a query's own key: not with causal masking
    # some query sees two keys or more (ln n > 0, so s matters: one key each would make every s pass)
    most = T - 3 if lsa else T - 2
    return (B, T, H * 2 * r.randint(1, 3), H, tuple(r.randint(0, most) for _ in range(B)), causal, lsa)


if __name__ == "__main__":
    fixture_cli.run(CASES, write_case, random_case)
