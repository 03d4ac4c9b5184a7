#!/usr/bin/env python3
"""torch.optim.SGD fixtures for tests/test_optim.c (tf_sgd_new against torch).

    python3 tests/ref/gen_sgd_fixtures.py --out tests/fixtures_optim

One file per case, <case>.safetensors: the parameters' initial values
(init.<name>), each step's gradients (grad.<step>.<name>) and learning rate
(lr, (STEPS,)), and the parameters after each step (after.<step>.<name>), as
torch.optim.SGD computes them in float32. tformer decays matrices only, so the
weight decay is given to a parameter group of the matrices and 0 to one of the
vectors. Settings: (momentum, nesterov, weight_decay).

Debian's torch 1.13 (build/hfvenv).
"""
import argparse
import os

import torch
from safetensors.torch import save_file

CASES = {
    "sgd_momentum_wd": (0.9, False, 0.1),
    "sgd_nesterov": (0.8, True, 0.05),
    "sgd_plain_wd": (0.0, False, 0.1),
    "sgd_momentum_no_wd": (0.5, False, 0.0),
}
STEPS = 5
SHAPES = {"w": (3, 4), "b": (4,), "emb": (5, 2, 3)}


def write(out, name, momentum, nesterov, wd, seed):
    g = torch.Generator().manual_seed(seed)
    params = {k: torch.randn(s, generator=g) for k, s in SHAPES.items()}
    res = {f"init.{k}": v.clone() for k, v in params.items()}
    ps = {k: torch.nn.Parameter(v.clone()) for k, v in params.items()}
    mats = [p for k, p in ps.items() if p.dim() >= 2]
    vecs = [p for k, p in ps.items() if p.dim() < 2]
    opt = torch.optim.SGD([{"params": mats, "weight_decay": wd}, {"params": vecs, "weight_decay": 0.0}],
                          lr=0.1, momentum=momentum, nesterov=nesterov)
    lrs = torch.tensor([0.1, 0.05, 0.2, 0.01, 0.3])[:STEPS]
    for s in range(STEPS):
        for k, p in ps.items():
            p.grad = torch.randn(p.shape, generator=g)
            res[f"grad.{s}.{k}"] = p.grad.clone()
        for group in opt.param_groups:
            group["lr"] = float(lrs[s])
        opt.step()
        for k, p in ps.items():
            res[f"after.{s}.{k}"] = p.detach().clone()
    res["lr"] = lrs
    save_file(res, os.path.join(out, f"{name}.safetensors"))
    print(f"wrote {out}/{name}.safetensors")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for i, (name, (m, n, wd)) in enumerate(sorted(CASES.items())):
        write(a.out, name, m, n, wd, 11 + i)
