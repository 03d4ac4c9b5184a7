#!/usr/bin/env python3
"""The fixture of tests/test_train_ref.c: tformer's tiny GPT trained by PyTorch.

    TFORMER_EXPORT_DIR=build/train_ref build/run_tests gpt_training_matches_torch
    PYTHON tests/ref/gen_train_fixtures.py build/train_ref [--out FILE]

Needs PyTorch 2.x, safetensors and transformers >= 4.50 (its cosine schedules
with a min_lr): build/pt2venv with transformers. The folder
holds what the test exported: init/ (tformer's initial weights, a Hugging
Face GPT-2 folder), batches.safetensors (input_ids.<s>, targets.<s>: every
step's batch as tformer's trainer draws it) and train.json (the settings).
This trains transformers' GPT2LMHeadModel from init/ on those batches in
float32: the mean cross-entropy over every position, backward,
torch.nn.utils.clip_grad_norm_, torch.optim.AdamW (weight decay on the
parameters of 2+ dims, a group with 0 for the others) at the schedule's
learning rate, from transformers.optimization: tformer's cosine is
get_cosine_with_min_lr_schedule_with_warmup_lr_rate's warmup (counted from 1)
and get_cosine_with_min_lr_schedule_with_warmup's decay at the same step
(tests/test_optim.c, lr_schedules_match_transformers).

Writes (default FOLDER/expected.safetensors): loss, grad_norm, lr (steps,)
and, for every tensor of init/model.safetensors, init.<name> and
final.<name>: every `stride`-th element (flattened) before and after.
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F
import transformers
from safetensors.torch import load_file, save_file
from transformers import GPT2LMHeadModel
from transformers import optimization as hf_opt


def schedule(cfg):
    """The learning rate of each 0-based step, from transformers' LambdaLRs."""
    def rates(fn):
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=cfg["lr"])
        sched = fn(opt, num_warmup_steps=cfg["warmup"], num_training_steps=cfg["steps"], min_lr=cfg["min_lr"])
        out = []
        for _ in range(cfg["steps"]):
            out.append(sched.get_last_lr()[0])
            opt.step()
            sched.step()
        return out
    warm = rates(hf_opt.get_cosine_with_min_lr_schedule_with_warmup_lr_rate)
    decay = rates(hf_opt.get_cosine_with_min_lr_schedule_with_warmup)
    return [warm[s] if s < cfg["warmup"] else decay[s] for s in range(cfg["steps"])]


def hf_name(model, name):
    """The model's state-dict name of a tensor of tformer's file."""
    sd = model.state_dict()
    for cand in (name, "transformer." + name):
        if cand in sd:
            return cand
    raise KeyError(name)


def samples(model, names, stride, prefix):
    sd = model.state_dict()
    return {f"{prefix}.{n}": sd[hf_name(model, n)].detach().flatten()[::stride].clone() for n in names}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--out")
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(a.folder, "train.json")))
    init = os.path.join(a.folder, "init")
    names = list(load_file(os.path.join(init, "model.safetensors")).keys())
    batches = load_file(os.path.join(a.folder, "batches.safetensors"))
    torch.manual_seed(0)
    model = GPT2LMHeadModel.from_pretrained(init, dtype=torch.float32, attn_implementation="eager")
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    rest = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"], foreach=False)
    res = samples(model, names, cfg["stride"], "init")
    lrs, losses, norms = schedule(cfg), [], []
    for s in range(cfg["steps"]):
        x, y = batches[f"input_ids.{s}"].long(), batches[f"targets.{s}"].long()
        logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(params, cfg["grad_clip"])
        for group in opt.param_groups:
            group["lr"] = lrs[s]
        opt.step()
        losses.append(loss.item()), norms.append(norm.item())
        print(f"step {s + 1}: loss {float(loss):.6f}, grad norm {float(norm):.6f}, lr {lrs[s]:.6g}")
    res.update(samples(model, names, cfg["stride"], "final"))
    res["loss"] = torch.tensor(losses, dtype=torch.float32)
    res["grad_norm"] = torch.tensor(norms, dtype=torch.float32)
    res["lr"] = torch.tensor(lrs, dtype=torch.float32)
    out = a.out or os.path.join(a.folder, "expected.safetensors")
    save_file(res, out, metadata={"torch": torch.__version__, "transformers": transformers.__version__})
    print(f"wrote {out} (torch {torch.__version__}, transformers {transformers.__version__})")


if __name__ == "__main__":
    main()
