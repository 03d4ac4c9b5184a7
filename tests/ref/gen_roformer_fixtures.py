#!/usr/bin/env python3
"""Hugging Face RoFormer folders and their outputs, for tests/test_rope.c: the
BERT family with interleaved rotary positions and no position table
(tformer's --rope interleaved --learned-positions false) against
transformers' RoFormer, a model-level reference for the rotation.

    python tests/ref/gen_roformer_fixtures.py --out tests/fixtures_roformer
        the committed cases (transformers 4.x)

    python tests/ref/gen_roformer_fixtures.py --random 12 --seed 1234 --out build/roformer_fresh
        fresh random configurations and inputs

    python tests/ref/gen_roformer_fixtures.py --expected-for build/roformer_export
        transformers loads each folder tformer wrote as RoFormer (test_rope.c's
        rope_roformer_export_for_transformers) and writes expected.safetensors

A case is a folder: config.json and model.safetensors as save_pretrained
writes them, input.safetensors (forward()'s arguments: input_ids,
attention_mask, token_type_ids, labels, start_positions, end_positions; int64)
and expected.safetensors (the fields transformers returns: last_hidden_state
of RoFormerModel; logits (start_logits, end_logits), and loss with labels, of
the heads), computed in float64 from the float32 weights (model.double()) and
rounded once. The sinusoid table (encoder.embed_positions.weight, saved with
the weights) keeps transformers' values; every other tensor is drawn as in
gen_nystrom_fixtures.py (LayerNorms N(1, 0.2) and N(0, 0.05), the rest N(0,
WSTD)): transformers' own std 0.02 gives nearly constant outputs.

The configurations cover head widths 2 to 8, several lengths up to
max_position_embeddings, padding on the right and the left, token types, the
four heads tformer maps onto BERT's (RoFormerModel, ForMaskedLM tied and
untied, ForTokenClassification, ForQuestionAnswering).

transformers 4.36.2 over Debian's torch 1.13 (build/hfvenv).
"""
import os

import torch

import fixture_cli
from transformers import (RoFormerConfig, RoFormerForMaskedLM, RoFormerForQuestionAnswering,
                          RoFormerForTokenClassification, RoFormerModel)

ARCHS = {"RoFormerModel": RoFormerModel, "RoFormerForMaskedLM": RoFormerForMaskedLM,
         "RoFormerForTokenClassification": RoFormerForTokenClassification,
         "RoFormerForQuestionAnswering": RoFormerForQuestionAnswering}
WSTD = 0.3


def cfg(h, heads, layers, max_pos, **kw):
    base = dict(vocab_size=23, hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=2 * h + 1, max_position_embeddings=max_pos, type_vocab_size=3)
    base.update(kw)
    return base


# (name, architecture, config, inputs)
CASES = [
    ("model_d4_T7", "RoFormerModel", cfg(8, 2, 2, 16), dict(B=2, T=7)),
    ("model_d8_T16_pad_types", "RoFormerModel", cfg(16, 2, 1, 16, hidden_act="gelu"),
     dict(B=3, T=16, pad="right", types=True)),
    ("model_d2_T12_leftpad", "RoFormerModel", cfg(6, 3, 2, 20, hidden_act="relu", layer_norm_eps=1e-5),
     dict(B=2, T=12, pad="left")),
    ("mlm_d4_T10_labels", "RoFormerForMaskedLM", cfg(12, 3, 1, 12), dict(B=2, T=10, pad="right", labels=True)),
    ("mlm_d6_T9_untied", "RoFormerForMaskedLM", cfg(12, 2, 1, 10, tie_word_embeddings=False, hidden_act="gelu_new"),
     dict(B=2, T=9, labels=True)),
    ("tokcls_d4_T11_labels", "RoFormerForTokenClassification", cfg(8, 2, 2, 14, num_labels=4),
     dict(B=2, T=11, pad="right", labels=True, types=True)),
    ("qa_d4_T8_positions", "RoFormerForQuestionAnswering", cfg(8, 2, 1, 8), dict(B=3, T=8, spans=True)),
]


def init_weights(model, g):
    """fixture_cli.init_bert_like; the sinusoid table stays transformers' own."""
    fixture_cli.init_bert_like(model, g, WSTD, keep=("embed_positions",))


def make_inputs(c, arch, spec, g):
    B, T = spec["B"], spec["T"]
    x = {"input_ids": torch.randint(0, c.vocab_size, (B, T), generator=g)}
    if "pad" in spec:
        x["attention_mask"] = fixture_cli.pad_mask(B, T, spec["pad"])
    if spec.get("types"):
        x["token_type_ids"] = torch.randint(0, c.type_vocab_size, (B, T), generator=g)
    if spec.get("labels"):
        x["labels"] = fixture_cli.token_labels(c.vocab_size if arch == "RoFormerForMaskedLM" else c.num_labels, B, T, g)
    if spec.get("spans"):
        x["start_positions"] = torch.randint(0, T, (B,), generator=g)
        x["end_positions"] = torch.randint(0, T, (B,), generator=g)
    return x


OUT = {"RoFormerModel": ("last_hidden_state",), "RoFormerForQuestionAnswering": ("start_logits", "end_logits", "loss")}


def reference(model, arch, x):
    """transformers' outputs in float64 from the float32 weights, rounded once."""
    return fixture_cli.fields(fixture_cli.double_forward(ARCHS[arch], model, x), OUT.get(arch, ("logits", "loss")))


def write_case(out, name, arch, cfg_kw, spec, seed):
    g = fixture_cli.seeded(seed)
    c = RoFormerConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **cfg_kw)
    model = ARCHS[arch](c).eval()
    init_weights(model, g)
    fixture_cli.save_case(out, name, model, arch, make_inputs(c, arch, spec, g), lambda x: reference(model, arch, x),
                          drop=())


def random_case(r):
    heads = r.randint(1, 4)
    d = 2 * r.randint(1, 4)  # RoFormer's rotation needs an even head width
    max_pos = r.randint(4, 24)
    kw = dict(hidden_act=r.choice(["gelu", "gelu_new", "relu", "gelu_pytorch_tanh"]),
              layer_norm_eps=r.choice([1e-12, 1e-5, 1e-3]), tie_word_embeddings=r.random() < 0.8)
    arch = r.choice(list(ARCHS))
    if arch == "RoFormerForTokenClassification":
        kw["num_labels"] = r.randint(2, 6)
    c = cfg(heads * d, heads, r.randint(1, 3), max_pos, **kw)
    T = r.randint(2, max_pos)
    spec = dict(B=r.randint(1, 3), T=T, types=r.random() < 0.3,
                labels=arch in ("RoFormerForMaskedLM", "RoFormerForTokenClassification") and r.random() < 0.6,
                spans=arch == "RoFormerForQuestionAnswering" and r.random() < 0.6)
    if r.random() < 0.6:
        spec["pad"] = r.choice(["right", "left"])
    return arch, c, spec


def expected_for(root):
    """transformers loads each folder tformer wrote and computes its outputs."""
    fixture_cli.expected_for(root, ARCHS, reference)


def main():
    fixture_cli.run(CASES, write_case, random_case, expected=expected_for)


if __name__ == "__main__":
    main()
