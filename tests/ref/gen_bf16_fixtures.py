#!/usr/bin/env python3
"""bf16 matrix-product fixtures for tests/test_bf16.c (tf_ctx_set_precision).

    build/hfvenv/bin/python tests/ref/gen_bf16_fixtures.py --out tests/fixtures_bf16

One file, bf16.safetensors:
- round.x: float32 values (ties, halfway+1, max, infinities, NaN, signed
  zeros, random) and round.bits: torch's bfloat16 of each (x.bfloat16(),
  round to nearest even) as int32 bit patterns. Subnormal inputs are left out:
  torch keeps bf16 subnormals, AVX512-BF16 (and tformer) make them zero.
- per case <c> of a dense layer y = x W^T + b: x (M,K), w (N,K), b (N) and an
  output gradient g (M,N), float32; y, dx, dw computed by torch in float64
  from the factors rounded to bfloat16 (torch's rounding), stored rounded
  once to float32:
      y  = b + bf16(x) bf16(w)^T,  dx = bf16(g) bf16(w),  dw = bf16(g)^T bf16(x)
  and the same in float64 from the float32 factors (y32, dx32, dw32), so a
  test can tell that the bf16 path ran.

Debian's torch 1.13 (build/hfvenv).
"""
import argparse
import os

import torch
from safetensors.torch import save_file

# name: (M, K, N): odd K (a padded pair), N past a 32-column strip, M past a 6-row tile
CASES = {
    "small": (3, 5, 7),
    "strips": (13, 64, 70),
    "odd": (7, 129, 33),
    "tall": (97, 48, 32),
}


def rounding_values():
    g = torch.Generator().manual_seed(7)
    special = [0.0, -0.0, 1.0, -1.0, 3.4028235e38, -3.4028235e38, float("inf"), float("-inf"), float("nan"),
               1.1754944e-38, -1.1754944e-38, 65504.0, 1e-30, 3.0e38]
    # exact ties: bf16 keeps 8 mantissa bits, so 1 + 2^-8 is halfway (to even: 1), 1 + 3*2^-8 (to even: up)
    ties = [1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -(1.0 + 2.0 ** -8), 2.0 + 2.0 ** -7, 1.0 + 2.0 ** -8 + 2.0 ** -20]
    rnd = torch.randn(200, generator=g) * torch.exp(torch.randn(200, generator=g) * 8)
    x = torch.cat([torch.tensor(special + ties, dtype=torch.float32), rnd.float()])
    bits = x.bfloat16().view(torch.int16).to(torch.int32) & 0xFFFF
    return x, bits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t = {}
    t["round.x"], t["round.bits"] = rounding_values()
    g = torch.Generator().manual_seed(1)
    for name, (M, K, N) in CASES.items():
        x = torch.randn(M, K, generator=g)
        w = torch.randn(N, K, generator=g) * 0.1
        b = torch.randn(N, generator=g)
        gy = torch.randn(M, N, generator=g)
        r = lambda v: v.bfloat16().double()  # noqa: E731
        d = lambda v: v.double()  # noqa: E731
        t[f"{name}.x"], t[f"{name}.w"], t[f"{name}.b"], t[f"{name}.g"] = x, w, b, gy
        t[f"{name}.y"] = d(b) + r(x) @ r(w).T
        t[f"{name}.dx"] = r(gy) @ r(w)
        t[f"{name}.dw"] = r(gy).T @ r(x)
        t[f"{name}.y32"] = d(b) + d(x) @ d(w).T
        t[f"{name}.dx32"] = d(gy) @ d(w)
        t[f"{name}.dw32"] = d(gy).T @ d(x)
    save_file({k: (v.float() if v.dtype == torch.float64 else v).contiguous() for k, v in t.items()}, os.path.join(args.out, "bf16.safetensors"))


if __name__ == "__main__":
    main()
