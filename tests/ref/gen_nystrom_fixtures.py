#!/usr/bin/env python3
"""Hugging Face Nystromformer folders and their outputs, for tests/test_nystrom.c.

    python tests/ref/gen_nystrom_fixtures.py --out tests/fixtures_nystrom
        the committed cases written by the running transformers' major version
        (4.x: CASES; 5.x: CASES_V5, named v5_...)

    python tests/ref/gen_nystrom_fixtures.py --random 12 --seed 1234 --out build/nystrom_fresh
        fresh random configurations and inputs

A case is a folder: config.json and model.safetensors as save_pretrained
writes them (safetensors: tformer does not read pytorch_model.bin),
input.safetensors (forward()'s arguments: input_ids, attention_mask,
token_type_ids, position_ids, labels; int64, labels float32 for regression)
and expected.safetensors (the fields transformers returns: last_hidden_state
of NystromformerModel; logits, and loss with labels, of the heads), computed
in float64 from the float32 weights (model.double()) and rounded once. Cases
with "grad" also hold gradients.safetensors: the loss's gradient with respect
to every parameter, by name, the same way.

The configurations cover several lengths, num_landmarks dividing
segment_means_seq_len, num_landmarks == segment_means_seq_len (transformers'
exact branch: any length up to max_position_embeddings), conv_kernel_size 3,
5 and null, padding on the right and on the left, token types and given
position ids. The sequence length is segment_means_seq_len except in the
exact branch: transformers reshapes by segment_means_seq_len, so another
length fails or mixes the rows of a batch.

Weights: LayerNorms N(1, 0.2) and N(0, 0.05), every other tensor N(0, WSTD):
transformers' own initialisation (std 0.02) gives nearly constant outputs,
which would not notice a misplaced weight.

transformers 4.36.2 over Debian's torch 1.13 (build/hfvenv); the 5.x cases with
transformers 5.x over PyTorch 2.x (5.24 fails on an attention_mask unless
num_landmarks equals segment_means_seq_len, so its cases use the exact branch).
"""
import os

import torch
import transformers

import fixture_cli
from transformers import (NystromformerConfig, NystromformerForMaskedLM, NystromformerForSequenceClassification,
                          NystromformerForTokenClassification, NystromformerModel)

ARCHS = {"NystromformerModel": NystromformerModel, "NystromformerForMaskedLM": NystromformerForMaskedLM,
         "NystromformerForSequenceClassification": NystromformerForSequenceClassification,
         "NystromformerForTokenClassification": NystromformerForTokenClassification}
WSTD = 0.3


def cfg(h, heads, layers, seq, lm, conv, **kw):
    base = dict(vocab_size=23, hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=2 * h + 1, max_position_embeddings=max(seq, 24), segment_means_seq_len=seq,
                num_landmarks=lm, conv_kernel_size=conv, type_vocab_size=3)
    base.update(kw)
    return base


# (name, architecture, config, inputs): T is segment_means_seq_len unless given
CASES = [
    ("model_T16_L4_k3", "NystromformerModel", cfg(8, 2, 2, 16, 4, 3), dict(B=2)),
    ("model_T12_L3_k5_pad_types", "NystromformerModel", cfg(12, 3, 1, 12, 3, 5, hidden_act="gelu"),
     dict(B=3, pad="right", types=True)),
    ("model_T8_L8_exact_k3_T6", "NystromformerModel", cfg(8, 2, 2, 8, 8, 3), dict(B=2, T=6, pad="right")),
    ("model_T8_L8_exact_k5_T8", "NystromformerModel", cfg(6, 1, 1, 8, 8, 5, hidden_act="relu"), dict(B=2)),
    ("model_T24_L6_k3_leftpad_pos", "NystromformerModel", cfg(10, 2, 1, 24, 6, 3, layer_norm_eps=1e-12),
     dict(B=2, pad="left", positions=True)),
    ("model_T10_L2_noconv", "NystromformerModel", cfg(9, 3, 2, 10, 2, None, hidden_act="gelu_pytorch_tanh"),
     dict(B=2, pad="right")),
    ("seqcls_T20_L5_k5_labels_grad", "NystromformerForSequenceClassification",
     cfg(8, 2, 2, 20, 5, 5, num_labels=3, hidden_act="gelu"), dict(B=3, pad="right", labels=True, grad=True)),
    ("seqcls_T8_L2_regression", "NystromformerForSequenceClassification",
     cfg(6, 2, 1, 8, 2, 3, num_labels=1), dict(B=2, labels=True)),
    ("mlm_T12_L4_k3_labels_grad", "NystromformerForMaskedLM", cfg(8, 2, 1, 12, 4, 3),
     dict(B=2, pad="right", labels=True, grad=True)),
    ("mlm_T9_L3_k5_untied", "NystromformerForMaskedLM", cfg(6, 3, 1, 9, 3, 5, tie_word_embeddings=False),
     dict(B=2, labels=True)),
    ("tokcls_T15_L5_k3_labels", "NystromformerForTokenClassification", cfg(10, 5, 2, 15, 5, 3, num_labels=4),
     dict(B=2, pad="right", labels=True, types=True)),
]

# transformers 5.x keeps the untied MLM decoder's bias (cls.predictions.decoder.bias,
# the one its forward adds) apart from cls.predictions.bias; 4.x ties the two.
CASES_V5 = [
    ("v5_mlm_T8_L8_exact_untied", "NystromformerForMaskedLM", cfg(8, 2, 2, 8, 8, 3, tie_word_embeddings=False),
     dict(B=2, pad="right", labels=True)),
]
MAJOR = int(transformers.__version__.split(".")[0])


def init_weights(model, g):
    fixture_cli.init_bert_like(model, g, WSTD)


def make_inputs(c, arch, spec, g):
    B, T = spec["B"], spec.get("T", c.segment_means_seq_len)
    x = {"input_ids": torch.randint(0, c.vocab_size, (B, T), generator=g)}
    if "pad" in spec:
        x["attention_mask"] = fixture_cli.pad_mask(B, T, spec["pad"])
    if spec.get("types"):
        x["token_type_ids"] = torch.randint(0, c.type_vocab_size, (B, T), generator=g)
    if spec.get("positions"):
        x["position_ids"] = torch.randint(0, c.max_position_embeddings + 2, (B, T), generator=g)
    if spec.get("labels"):
        if arch == "NystromformerForSequenceClassification":
            x["labels"] = fixture_cli.class_labels(c, B, g)
        else:
            n = c.vocab_size if arch == "NystromformerForMaskedLM" else c.num_labels
            x["labels"] = fixture_cli.token_labels(n, B, T, g)
    return x


def reference(model, arch, x, train=False):
    """transformers' outputs (or, with train, the loss's gradients)."""
    out = fixture_cli.double_forward(ARCHS[arch], model, x, train)
    if train:
        return out
    return fixture_cli.fields(out, ("last_hidden_state",) if arch == "NystromformerModel" else ("logits", "loss"))


def write_case(out, name, arch, cfg_kw, spec, seed):
    g = fixture_cli.seeded(seed)
    c = NystromformerConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **cfg_kw)
    model = ARCHS[arch](c).eval()
    init_weights(model, g)
    fixture_cli.save_case(out, name, model, arch, make_inputs(c, arch, spec, g),
                          lambda x, train=False: reference(model, arch, x, train), spec.get("grad"))


def random_case(r):
    heads = r.randint(1, 4)
    lm = r.randint(1, 6)
    exact = r.random() < 0.2
    seq = lm if exact else lm * r.randint(1, 5)
    kw = dict(hidden_act=r.choice(["gelu", "gelu_new", "relu", "gelu_pytorch_tanh"]),
              layer_norm_eps=r.choice([1e-12, 1e-5, 1e-3]), tie_word_embeddings=r.random() < 0.8)
    c = cfg(heads * r.randint(2, 4), heads, r.randint(1, 3), seq, lm, r.choice([None, 1, 3, 5, 7]), **kw)
    arch = r.choice(list(ARCHS))
    if arch in ("NystromformerForSequenceClassification", "NystromformerForTokenClassification"):
        c["num_labels"] = r.randint(1 if arch.endswith("SequenceClassification") else 2, 6)
    spec = dict(B=r.randint(1, 3), types=r.random() < 0.3, positions=r.random() < 0.2,
                labels=arch != "NystromformerModel" and r.random() < 0.6)
    if exact and seq >= 2 and r.random() < 0.5:
        spec["T"] = r.randint(2, seq)
    if r.random() < 0.6 and spec.get("T", seq) >= 2:
        spec["pad"] = r.choice(["right", "left"])
    return arch, c, spec


def main():
    fixture_cli.run(CASES if MAJOR == 4 else CASES_V5, write_case, random_case)

if __name__ == "__main__":
    main()
