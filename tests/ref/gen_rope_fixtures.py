#!/usr/bin/env python3
"""Rotary position embeddings as transformers applies them, for tests/test_rope.c.

    python tests/ref/gen_rope_fixtures.py --out tests/fixtures_rope
        the committed cases
    python tests/ref/gen_rope_fixtures.py --random 8 --seed 1 --out build/rope_fresh
        fresh random shapes, positions and bases

Each case is a folder holding case.safetensors: x (B,H,T,D), r (B,H,T,D),
out = the rotated x, grad_x = the gradient of sum(out * r), and spec (3)
float32: [start, base, kind], kind 1 for halves, 2 for interleaved (kept out
of the file's metadata, whose order would change from one run to the next).

- halves (kind 1): transformers' LLaMA code, LlamaRotaryEmbedding(D, base)
  for the cosines and sines of positions start .. start + T - 1 and
  apply_rotary_pos_emb (rotate_half: x[i] paired with x[i + D/2]);
- interleaved (kind 2): transformers' RoFormer code,
  RoFormerSinusoidalPositionalEmbedding(positions, D) with
  past_key_values_length = start (RoFormer's base is 10000) and
  RoFormerSelfAttention.apply_rotary_position_embeddings (x[2i] paired with
  x[2i+1]).

Both compute the angles in float32 (position * inverse frequency), as
transformers does; the rotation and the gradient run in float64 and are
rounded once. transformers 4.36.2 over Debian's torch 1.13 (build/hfvenv).
"""
import os

import torch
from safetensors.torch import save_file
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
from transformers.models.roformer.modeling_roformer import (RoFormerSelfAttention,
                                                            RoFormerSinusoidalPositionalEmbedding)

import fixture_cli

# (name, B, H, T, D, start, base, kind)
CASES = [
    ("halves_llama", 2, 3, 7, 8, 0, 10000.0, 1),
    ("halves_llama_start13_base500", 1, 2, 5, 6, 13, 500.0, 1),
    ("interleaved_roformer", 2, 2, 9, 10, 0, 10000.0, 2),
    ("interleaved_roformer_start6", 1, 3, 4, 4, 6, 10000.0, 2),
]


def rotated(x, start, base, kind):
    """x (B,H,T,D) float64 rotated by transformers' own functions."""
    B, H, T, D = x.shape
    if kind == 1:
        emb = LlamaRotaryEmbedding(D, max_position_embeddings=start + T, base=base)
        cos, sin = emb(x.float(), seq_len=start + T)  # (start+T, D), float32 angles
        pos = torch.arange(start, start + T).unsqueeze(0)
        out, _ = apply_rotary_pos_emb(x, x, cos.double(), sin.double(), pos)
        return out
    table = RoFormerSinusoidalPositionalEmbedding(start + T, D)
    # its sines fill the first half of a row: position 1's first is sin(1) (a table left unfilled would not be)
    assert abs(float(table.weight[1, 0]) - 0.8414709848) < 1e-6, "RoFormer's table is not the sinusoidal one"
    sinusoidal = table((B, T), past_key_values_length=start)[None, None, :, :].double()  # (1,1,T,D)
    out, _ = RoFormerSelfAttention.apply_rotary_position_embeddings(sinusoidal, x, x)
    return out


def write_case(out_dir, name, B, H, T, D, start, base, kind, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, H, T, D, generator=g, dtype=torch.float64, requires_grad=True)
    r = torch.randn(B, H, T, D, generator=g, dtype=torch.float64)
    y = rotated(x, start, base, kind)
    (y * r).sum().backward()
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    tensors = {"x": x.detach(), "r": r, "out": y.detach(), "grad_x": x.grad,
               "spec": torch.tensor([start, base, kind], dtype=torch.float64)}
    save_file({k: v.float().contiguous() for k, v in tensors.items()}, os.path.join(d, "case.safetensors"))


def random_case(r):
    kind = r.choice([1, 2])
    base = r.choice([10000.0, 500.0, 37.5]) if kind == 1 else 10000.0
    return (r.randint(1, 2), r.randint(1, 3), r.randint(1, 12), 2 * r.randint(1, 8), r.randint(0, 40), base, kind)


if __name__ == "__main__":
    fixture_cli.run(CASES, write_case, random_case)
