#!/usr/bin/env python3
"""Optimizer, clipping and schedule fixtures for tests/test_optim.c, from
PyTorch and transformers (tformer's tf_sgd_new, tf_adamw_new, tf_clip_grad_norm
and tf_lr_schedule against them).

    build/pt2venv/bin/python tests/ref/gen_optim_fixtures.py --out tests/fixtures_optim

Needs PyTorch 2.x with safetensors and transformers (for the schedules): a
venv with them (build/pt2venv plus transformers). The SGD
files are the same bytes from Debian's torch 1.13 and from 2.x.

sgd_<case>.safetensors, adamw_<case>.safetensors: the parameters' initial
values (init.<name>), each step's gradients (grad.<step>.<name>) and learning
rate (lr, (STEPS,)), and the parameters after each step (after.<step>.<name>),
as torch.optim.SGD / AdamW compute them in float32; AdamW's also hold both
moments after each step (m.<step>.<name>: exp_avg, v.<step>.<name>:
exp_avg_sq) and its settings (config: beta1, beta2, eps, weight_decay).
tformer decays matrices only, so the weight decay is given to a parameter
group of the matrices and 0 to one of the vectors.

clip_<case>.safetensors: gradients before (grad.<name>) and after
(after.<name>) torch.nn.utils.clip_grad_norm_, its max_norm and the norm it
returns (norm, float32). The parameter "big" (70001
elements, more than one of tformer's norm chunks) has gradients
((k * 7919) % 1000 - 500) / 256 (exact in float, the C test makes them), and
only every 97th element after clipping is stored (after.big_every97).

schedules.safetensors: transformers.optimization's learning rates for a run
of STEPS_SCHED steps: <name> (STEPS_SCHED + 1,) float32 is lr_lambda(k) * lr
for k = 0..STEPS_SCHED, the LambdaLR's rate after k scheduler steps (a
training loop that steps the scheduler after the optimizer, as the HF Trainer
does, uses entry k at its 0-based step k). Names and settings in SCHEDULES.
"""
import argparse
import os

import torch
from safetensors.torch import save_file

SGD_CASES = {
    "sgd_momentum_wd": (0.9, False, 0.1),
    "sgd_nesterov": (0.8, True, 0.05),
    "sgd_plain_wd": (0.0, False, 0.1),
    "sgd_momentum_no_wd": (0.5, False, 0.0),
}
# (beta1, beta2, eps, weight_decay, gradient scale): tformer's defaults (0.9, 0.99, wd 0.1), GPT-2's
# betas with a larger decay, an eps that dominates small gradients (its place in the denominator
# matters), and a small beta2 with no decay.
ADAMW_CASES = {
    "adamw_defaults": (0.9, 0.99, 1e-8, 0.1, 1.0),
    "adamw_gpt2_wd": (0.9, 0.95, 1e-8, 0.5, 1.0),
    "adamw_big_eps": (0.8, 0.999, 1e-2, 0.1, 1e-2),
    "adamw_no_wd": (0.5, 0.9, 1e-6, 0.0, 3.0),
}
STEPS = 5
LRS = [0.1, 0.05, 0.2, 0.01, 0.3]
SHAPES = {"w": (3, 4), "b": (4,), "emb": (5, 2, 3)}
ADAMW_SHAPES = dict(SHAPES, wide=(3, 37))  # 111 elements: whole vectors and a tail on every kernel set

# max_norm and the gradients' scale: above the limit, below it, and exactly at it (b's four
# gradients 0.5, the others 0: norm 1 = max_norm, and torch scales by 1 / (1 + 1e-6): its clamp at 1
# is on max_norm / (norm + 1e-6))
CLIP_CASES = {"clip_above": (1.0, 3.0), "clip_below": (50.0, 1.0), "clip_at_limit": (1.0, None)}
BIG = 70001


def optim_case(out, name, make_opt, shapes, seed, grad_scale=1.0, moments=False):
    g = torch.Generator().manual_seed(seed)
    params = {k: torch.randn(s, generator=g) for k, s in shapes.items()}
    res = {f"init.{k}": v.clone() for k, v in params.items()}
    ps = {k: torch.nn.Parameter(v.clone()) for k, v in params.items()}
    mats = [p for p in ps.values() if p.dim() >= 2]
    vecs = [p for p in ps.values() if p.dim() < 2]
    opt = make_opt(mats, vecs)
    lrs = torch.tensor(LRS[:STEPS])
    for s in range(STEPS):
        for k, p in ps.items():
            p.grad = torch.randn(p.shape, generator=g) * grad_scale
            res[f"grad.{s}.{k}"] = p.grad.clone()
        for group in opt.param_groups:
            group["lr"] = float(lrs[s])
        opt.step()
        for k, p in ps.items():
            res[f"after.{s}.{k}"] = p.detach().clone()
            if moments:
                res[f"m.{s}.{k}"] = opt.state[p]["exp_avg"].clone()
                res[f"v.{s}.{k}"] = opt.state[p]["exp_avg_sq"].clone()
    res["lr"] = lrs
    return res


def write(out, name, res):
    save_file(res, os.path.join(out, f"{name}.safetensors"))
    print(f"wrote {out}/{name}.safetensors")


def sgd(out):
    for i, (name, (m, n, wd)) in enumerate(sorted(SGD_CASES.items())):
        def make(mats, vecs, m=m, n=n, wd=wd):
            return torch.optim.SGD([{"params": mats, "weight_decay": wd}, {"params": vecs, "weight_decay": 0.0}],
                                   lr=0.1, momentum=m, nesterov=n)
        write(out, name, optim_case(out, name, make, SHAPES, 11 + i))


def f32(x):
    """x rounded to float32, as a Python float: tformer's settings are floats."""
    return float(torch.tensor(x, dtype=torch.float32))


def adamw(out):
    # torch is given the settings tformer holds: float32(0.999) = 0.99900001287 makes 1 - beta2
    # 1.3e-5 (relative) smaller than torch's 1 - 0.999 and so v (0.99: 1e-6), which is the config's
    # float, not the update; given the float's value, torch computes the same AdamW.
    for i, (name, (b1, b2, eps, wd, scale)) in enumerate(sorted(ADAMW_CASES.items())):
        b1, b2, eps, wd = f32(b1), f32(b2), f32(eps), f32(wd)
        def make(mats, vecs, b1=b1, b2=b2, eps=eps, wd=wd):
            return torch.optim.AdamW([{"params": mats, "weight_decay": wd}, {"params": vecs, "weight_decay": 0.0}],
                                     lr=0.1, betas=(b1, b2), eps=eps, foreach=False)
        res = optim_case(out, name, make, ADAMW_SHAPES, 31 + i, scale, moments=True)
        res["config"] = torch.tensor([b1, b2, eps, wd], dtype=torch.float32)
        write(out, name, res)


def clip(out):
    big = ((torch.arange(BIG, dtype=torch.int64) * 7919) % 1000 - 500).float() / 256
    for i, (name, (max_norm, scale)) in enumerate(sorted(CLIP_CASES.items())):
        g = torch.Generator().manual_seed(51 + i)
        ps = {k: torch.nn.Parameter(torch.zeros(s)) for k, s in SHAPES.items()}
        for p in ps.values():
            p.grad = torch.randn(p.shape, generator=g) * scale if scale else torch.zeros(p.shape)
        if scale is None:
            ps["b"].grad.fill_(0.5)
        else:
            ps["big"] = torch.nn.Parameter(torch.zeros(BIG))
            ps["big"].grad = big.clone() * (1e-2 * scale)
        res = {f"grad.{k}": p.grad.clone() for k, p in ps.items() if k != "big"}
        norm = torch.nn.utils.clip_grad_norm_(list(ps.values()), max_norm)
        for k, p in ps.items():
            if k == "big":
                res["after.big_every97"] = p.grad[::97].clone()
            else:
                res[f"after.{k}"] = p.grad.clone()
        res["max_norm"] = torch.tensor([max_norm], dtype=torch.float32)
        res["norm"] = norm.reshape(1).float()
        res["big_scale"] = torch.tensor([0.0 if scale is None else 1e-2 * scale], dtype=torch.float32)
        write(out, name, res)


STEPS_SCHED, WARMUP, LR, MIN_LR = 50, 10, 1e-3, 1e-4
# name: (transformers function, its keyword arguments)
SCHEDULES = {
    "cosine_min_lr": ("get_cosine_with_min_lr_schedule_with_warmup",
                      dict(num_warmup_steps=WARMUP, num_training_steps=STEPS_SCHED, min_lr=MIN_LR)),
    "cosine_min_lr_rate": ("get_cosine_with_min_lr_schedule_with_warmup_lr_rate",
                           dict(num_warmup_steps=WARMUP, num_training_steps=STEPS_SCHED, min_lr=MIN_LR)),
    "cosine_min_lr_w0": ("get_cosine_with_min_lr_schedule_with_warmup",
                         dict(num_warmup_steps=0, num_training_steps=STEPS_SCHED, min_lr=MIN_LR)),
    "inverse_sqrt": ("get_inverse_sqrt_schedule", dict(num_warmup_steps=WARMUP)),
    "inverse_sqrt_w0_t1": ("get_inverse_sqrt_schedule", dict(num_warmup_steps=0, timescale=1)),
    "constant_with_warmup": ("get_constant_schedule_with_warmup", dict(num_warmup_steps=WARMUP)),
}


def schedules(out):
    import transformers
    from transformers import optimization
    res = {}
    for name, (fn, kw) in SCHEDULES.items():
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=LR)
        sched = getattr(optimization, fn)(opt, **kw)
        lrs = []
        for _ in range(STEPS_SCHED + 1):
            lrs.append(sched.get_last_lr()[0])
            opt.step()
            sched.step()
        res[name] = torch.tensor(lrs, dtype=torch.float32)
    print(f"transformers {transformers.__version__}")
    write(out, "schedules", res)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="sgd,adamw,clip,schedules")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for part in a.only.split(","):
        {"sgd": sgd, "adamw": adamw, "clip": clip, "schedules": schedules}[part](a.out)
