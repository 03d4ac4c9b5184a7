#!/usr/bin/env python3
"""Hugging Face BigBirdModel with attention_type "block_sparse", for tests/test_bigbird.c.

    python tests/ref/gen_bigbird_fixtures.py --out tests/fixtures_bigbird
        the committed cases (transformers 4.36.2)

    python tests/ref/gen_bigbird_fixtures.py --random 20 --seed 7 --out build/bigbird_fresh
        fresh random configurations and inputs (make bigbird-conformance)

A case is a folder: config.json and model.safetensors (save_pretrained),
input.safetensors (input_ids, attention_mask, token_type_ids as forward()
takes them; int64) and expected.safetensors (last_hidden_state, pooler_output),
computed in float64 from the float32 weights and rounded once.

The random blocks. transformers draws them with NumPy in training mode
(np.random.seed(layer index), then permutations: _bigbird_block_rand_mask_with_head,
or _bigbird_block_rand_mask for lengths 1024, 3072 and 4096) and draws none
in evaluation mode (every random block is block 0). "train" cases run the
model in training mode with every dropout 0 and record the table each layer
used by wrapping BigBirdBlockSparseAttention._create_rand_mask_from_inputs,
which receives it: input.safetensors then also holds rand_attn (num layers,
heads, blocks - 2, num_random_blocks), tformer's input naming the blocks.
"eval" cases have no table: tformer then takes block 0, as transformers.

Lengths: some not a multiple of block_size (transformers pads them with
pad_token_id and mask 0, and cuts the output), some at most (5 + 2
num_random_blocks) block_size (transformers falls back to original_full).
"""
import os
import shutil

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import BigBirdConfig, BigBirdModel
from transformers.models.big_bird import modeling_big_bird as mbb

import fixture_cli

WSTD = 0.3


def cfg(h, heads, layers, block, r, **kw):
    base = dict(vocab_size=31, hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=2 * h + 3, max_position_embeddings=256, type_vocab_size=3,
                attention_type="block_sparse", block_size=block, num_random_blocks=r)
    base.update(kw)
    return base


# (name, config, inputs): T tokens; mode "train" records transformers' random blocks
CASES = [
    ("eval_T48_b4_r1", cfg(8, 2, 2, 4, 1), dict(B=2, T=48, mode="eval")),
    ("eval_T45_b4_r2_pad_types", cfg(12, 3, 1, 4, 2), dict(B=3, T=45, mode="eval", pad=True, types=True)),
    ("train_T64_b4_r2", cfg(8, 2, 2, 4, 2), dict(B=2, T=64, mode="train")),
    ("train_T70_b8_r1_pad", cfg(12, 4, 2, 8, 1, hidden_act="gelu_new"), dict(B=3, T=70, mode="train", pad=True)),
    ("train_T96_b8_r3_types", cfg(6, 1, 1, 8, 3), dict(B=1, T=96, mode="train", types=True)),
    ("train_T33_b2_r4_pad", cfg(10, 5, 3, 2, 4, layer_norm_eps=1e-5), dict(B=2, T=33, mode="train", pad=True)),
    ("fallback_T20_b4_r1_full", cfg(8, 2, 1, 4, 1), dict(B=2, T=20, mode="eval", pad=True)),
]


def init_weights(model, g):
    fixture_cli.init_bert_like(model, g, WSTD)


def make_inputs(c, spec, g):
    B, T = spec["B"], spec["T"]
    x = {"input_ids": torch.randint(0, c.vocab_size, (B, T), generator=g)}
    if spec.get("pad"):
        mask = torch.ones(B, T, dtype=torch.int64)
        for b in range(1, B):  # row 0 whole; the others lose 1 .. T/2 tokens on the right
            mask[b, T - (1 + (b * 7) % (T // 2)):] = 0
        x["attention_mask"] = mask
    if spec.get("types"):
        x["token_type_ids"] = torch.randint(0, c.type_vocab_size, (B, T), generator=g)
    return x


def reference(model, x, train):
    """transformers' outputs in float64 and, in training mode, the random
    blocks each layer drew (L, H, blocks - 2, r)."""
    m = BigBirdModel(model.config)  # a fresh model: a fallback to original_full is permanent
    m.load_state_dict(model.state_dict())
    m = m.double()
    m.train(train)  # every dropout is 0
    tables = []
    orig = mbb.BigBirdBlockSparseAttention._create_rand_mask_from_inputs

    def record(from_blocked_mask, to_blocked_mask, rand_attn, *rest):
        tables.append(rand_attn[0].clone())
        return orig(from_blocked_mask, to_blocked_mask, rand_attn, *rest)

    mbb.BigBirdBlockSparseAttention._create_rand_mask_from_inputs = staticmethod(record)
    try:
        with torch.no_grad():
            out = m(**x)
    finally:
        mbb.BigBirdBlockSparseAttention._create_rand_mask_from_inputs = staticmethod(orig)
    exp = {"last_hidden_state": out.last_hidden_state.float(), "pooler_output": out.pooler_output.float()}
    return exp, (torch.stack(tables).to(torch.int64) if tables else None), m.attention_type


def write_case(out, name, cfg_kw, spec, seed):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    c = BigBirdConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **cfg_kw)
    model = BigBirdModel(c).eval()
    init_weights(model, g)
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    x = make_inputs(c, spec, g)
    exp, table, kind = reference(model, x, spec["mode"] == "train")
    if table is not None and table.numel() and not (table == 0).all():
        x["rand_attn"] = table
    save_file({k: v.contiguous() for k, v in x.items()}, os.path.join(d, "input.safetensors"))
    save_file({k: v.contiguous() for k, v in exp.items()}, os.path.join(d, "expected.safetensors"))
    print(f"wrote {d} (transformers {transformers.__version__}, numpy {np.__version__}; ran as {kind}; "
          f"inputs {', '.join(x)})")


def random_case(r):
    heads = r.randint(1, 4)
    block = r.choice([1, 2, 3, 4, 8])
    nr = r.randint(1, 3)  # 0: transformers fails (a view of 0 elements)
    least = (5 + 2 * nr) * block
    T = r.randint(max(2, least - 2 * block), least + 6 * block + 5)  # some fall back to full attention
    kw = dict(hidden_act=r.choice(["gelu", "gelu_new", "relu"]), layer_norm_eps=r.choice([1e-12, 1e-5]))
    c = cfg(heads * r.randint(2, 4), heads, r.randint(1, 3), block, nr, **kw)
    spec = dict(B=r.randint(1, 3), T=T, mode=r.choice(["eval", "train"]), pad=r.random() < 0.5,
                types=r.random() < 0.3)
    return c, spec


def main():
    fixture_cli.run(CASES, write_case, random_case)


if __name__ == "__main__":
    main()
