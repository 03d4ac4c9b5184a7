#!/usr/bin/env python3
"""Hugging Face GPT-2 fixtures for tests/test_gpt.c (transformers + torch).

    python3 tests/ref/gen_gpt2_fixtures.py --out tests/fixtures_gpt2
        random-initialised GPT2LMHeadModel folders (config.json + model.safetensors
        via save_pretrained) of several configurations, each with expected.safetensors:
        input_ids (B,T) and the logits, computed in float64 from the float32
        weights and rounded once.

    python3 tests/ref/gen_gpt2_fixtures.py --check-export DIR
        loads a folder written by tformer (tf_gpt_save_hf) with
        GPT2LMHeadModel.from_pretrained and compares its logits on DIR/expected.safetensors'
        input_ids with the logits stored there; exit 1 beyond 1e-5 relative error.

Run with a Python that has torch and transformers 4.x (Debian's python3-torch
plus `pip install transformers==4.36.2` in a venv with system site packages).
"""
import argparse
import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import GPT2Config, GPT2LMHeadModel

CONFIGS = {
    "tiny_gelu_new": dict(vocab_size=37, n_positions=16, n_embd=12, n_layer=2, n_head=3),
    "relu_inner": dict(vocab_size=29, n_positions=12, n_embd=10, n_layer=1, n_head=2, n_inner=18,
                       activation_function="relu"),
    "gelu_untied": dict(vocab_size=41, n_positions=20, n_embd=14, n_layer=3, n_head=7,
                        activation_function="gelu", tie_word_embeddings=False),
    "odd_heads_eps": dict(vocab_size=50, n_positions=24, n_embd=15, n_layer=2, n_head=5, layer_norm_epsilon=1e-3),
}


def logits_f64(model, ids):
    m = GPT2LMHeadModel(model.config)
    m.load_state_dict(model.state_dict())
    m = m.double().eval()
    with torch.no_grad():
        return m(ids).logits.float()


def generate(out):
    for i, (name, kw) in enumerate(sorted(CONFIGS.items())):
        torch.manual_seed(100 + i)
        cfg = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **kw)
        model = GPT2LMHeadModel(cfg).eval()
        with torch.no_grad():  # larger than the default 0.02 so that every path matters
            for p in model.parameters():
                p.normal_(0.0, 0.3)
        d = os.path.join(out, name)
        model.save_pretrained(d, safe_serialization=True)
        g = torch.Generator().manual_seed(7 + i)
        ids = torch.randint(0, cfg.vocab_size, (2, cfg.n_positions - 3), generator=g)
        save_file({"input_ids": ids, "logits": logits_f64(model, ids)}, os.path.join(d, "expected.safetensors"))
        print(f"wrote {d}")


def check_export(d):
    exp = load_file(os.path.join(d, "expected.safetensors"))
    model = GPT2LMHeadModel.from_pretrained(d).double().eval()
    with torch.no_grad():
        got = model(exp["input_ids"]).logits.float()
    err = float((got - exp["logits"]).norm() / exp["logits"].norm())
    print(f"{d}: transformers' logits of the exported model, relative error {err:.2e}")
    return 0 if err <= 1e-5 else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--check-export")
    a = ap.parse_args()
    if a.check_export:
        sys.exit(check_export(a.check_export))
    generate(a.out)
