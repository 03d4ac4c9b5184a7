#!/usr/bin/env python3
"""Hugging Face ImageGPT fixtures for tests/test_imagegpt_hf.c (hf-run).

    python tests/ref/gen_imagegpt_hf_fixtures.py --out tests/fixtures_imagegpt_hf
    python tests/ref/gen_imagegpt_hf_fixtures.py --random 12 --seed 1 --out build/igpt_fresh
    python tests/ref/gen_imagegpt_hf_fixtures.py --expected-for build/igpt_export
        transformers loads each folder tformer wrote (tformer train --arch
        imagegpt's layout) and writes expected.safetensors

A case is a folder: config.json and model.safetensors as save_pretrained
writes them (ImageGPTModel or ImageGPTForCausalImageModeling),
input.safetensors (input_ids int64 (B,T), the start token vocab_size - 1 at
places; attention_mask with right padding; position_ids; labels below
vocab_size - 1 with -100 at places) and expected.safetensors
(last_hidden_state, or logits (B,T,vocab_size-1) and loss with labels),
computed in float64 from the float32 weights and rounded once.

Weights: the norms' weights N(1, 0.2), every other tensor N(0, 0.3): the
default initialisation (std 0.02) gives nearly constant outputs.

transformers 4.36.2 over Debian's torch 1.13 (build/hfvenv).
"""
import os

import torch
from safetensors.torch import save_file
from transformers import ImageGPTConfig, ImageGPTForCausalImageModeling, ImageGPTModel

import fixture_cli

ARCHS = {"ImageGPTModel": ImageGPTModel, "ImageGPTForCausalImageModeling": ImageGPTForCausalImageModeling}

# (name, architecture, config, inputs)
CASES = [
    ("causal_k16_labels", "ImageGPTForCausalImageModeling",
     dict(vocab_size=17, n_positions=16, n_embd=12, n_layer=2, n_head=3),
     dict(B=2, T=16, labels=True)),
    ("causal_k8_rightpad_gelu", "ImageGPTForCausalImageModeling",
     dict(vocab_size=9, n_positions=12, n_embd=16, n_layer=3, n_head=4, n_inner=20, activation_function="gelu",
          layer_norm_epsilon=1e-3),
     dict(B=3, T=10, pad=True, labels=True)),
    ("model_k32_posids", "ImageGPTModel",
     dict(vocab_size=33, n_positions=20, n_embd=10, n_layer=1, n_head=5, activation_function="quick_gelu"),
     dict(B=2, T=14, posids=True)),
    ("model_k4_rightpad_relu", "ImageGPTModel",
     dict(vocab_size=5, n_positions=9, n_embd=8, n_layer=2, n_head=2, n_inner=12, activation_function="relu"),
     dict(B=2, T=9, pad=True)),
]


def init_weights(model, g):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".ln_" in name or "ln_f" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


def reference(model, arch, x):
    """transformers' outputs in float64 from the float32 weights, rounded once."""
    m = ARCHS[arch](model.config)
    m.load_state_dict(model.state_dict())
    m = m.double().eval()
    with torch.no_grad():
        out = m(**x)
    if arch == "ImageGPTModel":
        return {"last_hidden_state": out.last_hidden_state.float()}
    res = {"logits": out.logits.float()}
    if out.loss is not None:
        res["loss"] = out.loss.float().reshape(())
    return res


def make_inputs(cfg, B, T, g, pad=False, posids=False, labels=False):
    V = cfg.vocab_size
    ids = torch.randint(0, V, (B, T), generator=g)
    ids[:, 0] = V - 1  # the start token first, as ImageGPT's images begin
    x = {"input_ids": ids}
    if pad:  # right padding: row b keeps its first T - b tokens
        mask = torch.ones(B, T, dtype=torch.int64)
        for b in range(1, B):
            mask[b, T - 2 * b:] = 0
        x["attention_mask"] = mask
    if posids:
        x["position_ids"] = torch.randint(0, cfg.n_positions, (B, T), generator=g)
    if labels:
        y = torch.randint(0, V - 1, (B, T), generator=g)
        y[0, min(3, T - 1)] = -100
        x["labels"] = y
    return x


def write_case(out, name, arch, cfg_kw, inp, seed):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    cfg = ImageGPTConfig(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **cfg_kw)
    cfg.architectures = [arch]
    model = ARCHS[arch](cfg).eval()
    init_weights(model, g)
    d = os.path.join(out, name)
    model.save_pretrained(d, safe_serialization=True)
    x = make_inputs(cfg, inp["B"], inp["T"], g, inp.get("pad", False), inp.get("posids", False),
                    inp.get("labels", False))
    save_file({k: v.contiguous() for k, v in x.items()}, os.path.join(d, "input.safetensors"))
    save_file(reference(model, arch, x), os.path.join(d, "expected.safetensors"))
    print(f"wrote {d}")


def random_case(r):
    arch = r.choice(list(ARCHS))
    n_head = r.randint(1, 4)
    cfg = dict(vocab_size=r.randint(3, 40), n_positions=r.randint(4, 24), n_embd=n_head * r.randint(2, 6),
               n_layer=r.randint(1, 3), n_head=n_head, layer_norm_epsilon=r.choice([1e-5, 1e-3]),
               activation_function=r.choice(["quick_gelu", "gelu", "gelu_new", "relu"]))
    if r.random() < 0.5:
        cfg["n_inner"] = r.randint(4, 40)
    T = r.randint(max(2, cfg["n_positions"] // 2), cfg["n_positions"])
    inp = dict(B=r.randint(1, 3), T=T, pad=r.random() < 0.4 and T >= 6, posids=r.random() < 0.3,
               labels=arch != "ImageGPTModel" and r.random() < 0.6)
    return [arch, cfg, inp]


def expected_for(root):
    fixture_cli.expected_for(root, ARCHS, reference)


if __name__ == "__main__":
    fixture_cli.run(CASES, write_case, random_case, expected=expected_for)
