#!/usr/bin/env python3
"""Int8 dense-layer fixtures for tests/test_quant.c (tf_params_quantize).

    build/hfvenv/bin/python tests/ref/gen_quant_fixtures.py --out tests/fixtures_quant

One file, quant.safetensors; per case <c>: the input x (M,K), weight w (N,K)
and bias b (N) in float32; torch's quantisation of them by the documented
scheme (src/ops/quant.h): each row in blocks of 32 values along K (the last
one shorter when K is not a multiple of 32), each block's absmax scale
s = max|block| / 127 in float32, q = torch.round(v / s) (ties to even) in
[-127, 127], as xq (M,K), wq (N,K) (int8) and sx (M,B), sw (N,B), B =
ceil(K / 32); and y (M,N) = b + sum over blocks of sx sw (xq wq^T over the
block) computed in float64 from them, rounded to float32 once. A block of
zeros has scale 0 and quantises to zeros.

Debian's torch 1.13 (build/hfvenv).
"""
import argparse
import os

import torch
from safetensors.torch import save_file

# name: (M, K, N)
CASES = {
    "small": (3, 5, 7),
    "pad": (5, 70, 9),
    "gemv": (1, 130, 70),
    "wide": (9, 256, 67),
    "ties": (1, 4, 3),
    "outlier": (4, 384, 48),
}
BLOCK = 32


def quantise_blocks(v):
    """Block scales (rows, B) and integers (rows, cols) as float32, torch's rounding."""
    rows, cols = v.shape
    nb = (cols + BLOCK - 1) // BLOCK
    vb = torch.nn.functional.pad(v, (0, nb * BLOCK - cols)).reshape(rows, nb, BLOCK)
    s = vb.abs().amax(dim=2) / 127.0
    safe = torch.where(s > 0, s, torch.ones_like(s))
    q = torch.round(vb / safe[:, :, None]).clamp(-127, 127)
    q = torch.where(s[:, :, None] > 0, q, torch.zeros_like(q))
    return s, q.reshape(rows, nb * BLOCK)[:, :cols]


def case(g, M, K, N, name):
    x = torch.randn(M, K, generator=g)
    w = torch.randn(N, K, generator=g) * 0.1
    b = torch.randn(N, generator=g)
    if name == "wide":
        x[2].zero_()             # an all-zero input row
        w[5].zero_()             # an all-zero weight row
        x[4, 17] = 40.0          # an outlier, as in GPT-2's residual features
    if name == "ties":
        x = torch.tensor([[127.0, 0.5, 1.5, -2.5]])  # scale 1: ties to even give 0, 2, -2
    if name == "outlier":
        x[:, [5, 77, 300]] *= 30.0  # a few large channels, as a BERT's LayerNorm outputs have
        x[1, 200:232].zero_()      # an all-zero input block
        w[3, 64:96].zero_()        # an all-zero weight block
    sx, xq = quantise_blocks(x)
    sw, wq = quantise_blocks(w)
    y = b.double()[None, :].repeat(M, 1)
    for j in range(sx.shape[1]):
        k = slice(j * BLOCK, (j + 1) * BLOCK)
        acc = xq[:, k].double() @ wq[:, k].double().T
        y += sx[:, j].double()[:, None] * sw[:, j].double()[None, :] * acc
    y = y.float()
    return {"x": x, "w": w, "b": b, "xq": xq.to(torch.int8), "wq": wq.to(torch.int8), "sx": sx, "sw": sw, "y": y}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures_quant")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    g = torch.Generator().manual_seed(8)
    res = {}
    for name, (M, K, N) in CASES.items():
        for k, v in case(g, M, K, N, name).items():
            res[f"{name}.{k}"] = v.contiguous()
    path = os.path.join(args.out, "quant.safetensors")
    save_file(res, path)
    os.chmod(path, 0o644)
    print(f"wrote {len(res)} tensors to {args.out}/quant.safetensors")


if __name__ == "__main__":
    main()
