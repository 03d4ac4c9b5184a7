#!/usr/bin/env python3
"""Random GPT-2 folders and transformers' beam search ids on them, for tests/test_gpt_beam.c.

    python tests/ref/gen_gpt2_beam_fixtures.py --out tests/fixtures_gpt2_beam

Each case is a folder: config.json and model.safetensors (save_pretrained) and
generate.json: prompts and, for each run, the options given to generate()
(num_beams, max_new_tokens, length_penalty, early_stopping,
repetition_penalty) and the new ids it gives for each prompt (the float32
model, one prompt at a time; eos = pad = the last id). Every run has a
repetition penalty (above and below 1); the script stops unless each
penalty changes some outputs of the same runs without it, and records how
many (`changed`): a search that ignores the penalty fails the test.

Weights (as the hunt that found beam search ignoring the penalty): LayerNorm
gains N(1, 0.2), biases N(0, 0.05), tables N(0, 1), the rest N(0, 1.5/sqrt(width));
the eos row of the untied head is ln_f's bias scaled so that eos comes up
often (hypotheses end inside max_new_tokens). One case has a vocabulary of
300: beam search skips blocks of 64 tokens, which a penalty below 1 (it
raises a seen token's score) must not skip.

transformers 4.36.2 over Debian's torch 1.13 (build/hfvenv).
"""
import argparse
import json
import os
import random
import shutil

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

# name: config, eos strength
CASES = {
    "v7_two_layers": (dict(vocab_size=7, n_positions=24, n_embd=16, n_layer=2, n_head=2), 1.0),
    "v50_four_heads": (dict(vocab_size=50, n_positions=32, n_embd=16, n_layer=2, n_head=4), 2.0),
    "v300_one_layer": (dict(vocab_size=300, n_positions=40, n_embd=24, n_layer=1, n_head=3), 2.5),
}
PENALTIES = (1.6, 3.0, 0.7, 0.3)
STOPS = (False, True, "never")


def make_model(name, kw, eos_bias, seed):
    torch.manual_seed(seed)
    V = kw["vocab_size"]
    cfg = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=False,
                     bos_token_id=V - 1, eos_token_id=V - 1, **kw)
    m = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "ln" in n and n.endswith("weight"):
                p.normal_(1.0, 0.2)
            elif n.endswith("bias"):
                p.normal_(0.0, 0.05)
            elif "wte" in n or "wpe" in n:
                p.normal_(0.0, 1.0)
            else:
                p.normal_(0.0, 1.5 / kw["n_embd"] ** 0.5)
        u = m.transformer.ln_f.bias
        u.normal_(0.0, 0.3)
        m.lm_head.weight[V - 1] = u / u.norm() ** 2 * eos_bias + 0.1 * torch.randn(kw["n_embd"])
    return m


def generate(m, prompt, opts):
    V = m.config.vocab_size
    with torch.no_grad():
        ids = m.generate(torch.tensor([prompt]), do_sample=False, pad_token_id=V - 1, eos_token_id=V - 1,
                         num_return_sequences=1, **opts)[0].tolist()
    return ids[len(prompt):]


def runs_for(rnd):
    runs = []
    for pen in PENALTIES:
        for nb in (2, 3, 5):
            for es in STOPS:
                runs.append(dict(num_beams=nb, max_new_tokens=rnd.choice([3, 6, 10]),
                                 length_penalty=rnd.choice([1.0, 0.0, 2.0, -0.5]), early_stopping=es,
                                 repetition_penalty=pen))
    return runs


def write_case(out, name, kw, eos_bias, seed):
    m = make_model(name, kw, eos_bias, seed)
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    m.save_pretrained(d, safe_serialization=True)
    if os.path.exists(os.path.join(d, "generation_config.json")):  # options go explicitly to generate()
        os.remove(os.path.join(d, "generation_config.json"))
    V = kw["vocab_size"]
    rnd = random.Random(seed)
    prompts = [[rnd.randrange(V - 1) for _ in range(rnd.randint(1, 6))] for _ in range(6)]
    runs, changed = [], {}
    for run in runs_for(rnd):
        outs = [generate(m, p, run) for p in prompts]
        bare = {k: v for k, v in run.items() if k != "repetition_penalty"}
        n = sum(a != generate(m, p, bare) for a, p in zip(outs, prompts))
        changed[run["repetition_penalty"]] = changed.get(run["repetition_penalty"], 0) + n
        runs.append(dict(run, outputs=outs))
    for pen, n in changed.items():
        print(f"  {name}: repetition_penalty {pen}: {n} of {len(runs) // len(PENALTIES) * len(prompts)} outputs change")
        assert n > 0, "the penalty changes nothing: the test could not fail"
    with open(os.path.join(d, "generate.json"), "w") as f:
        json.dump({"transformers": transformers.__version__, "eos_token_id": V - 1, "prompts": prompts,
                   "changed": {str(k): v for k, v in changed.items()}, "runs": runs}, f, indent=0)
    print(f"wrote {d} (transformers {transformers.__version__})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    for i, (name, (kw, eos_bias)) in enumerate(sorted(CASES.items())):
        write_case(a.out, name, kw, eos_bias, 11 + i)


if __name__ == "__main__":
    main()
