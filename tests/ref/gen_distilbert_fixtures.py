#!/usr/bin/env python3
"""DistilBERT model folders and their outputs, for `tformer hf-run` (tests/test_distilbert.c).

    python tests/ref/gen_distilbert_fixtures.py --out tests/fixtures_distilbert
        the committed cases of the running transformers' major version (run
        it with 4.x and with 5.x); --random N --seed S --out DIR, fresh ones
        (make distilbert-conformance); --expected-for DIR, transformers'
        outputs for folders tformer wrote (fixture_cli.py)

A case is a folder as fixture_cli.save_case writes it (DistilBertConfig, F32;
the outputs in float64, rounded once; *_grad cases with the loss's gradients).

What DistilBERT changes from BERT, and so what the inputs exercise: its own
config keys (dim, n_layers, n_heads, hidden_dim, activation); no token types;
the word row pad_token_id takes no gradient (padding_idx: pad_token_id among
the attended tokens of the gradient cases, one pad_token_id other than 0, one
null); the MLM head's activation is config.activation (relu, gelu_new cases);
the sequence classifier is pre_classifier + ReLU + classifier on the first
token; sinusoidal_pos_embds (4.x: a random table, frozen; 5.x: the sinusoid:
kept as 5.x writes it). position_ids is an argument of 5.x's forward() only.
Every LayerNorm has eps 1e-12 whatever config.json says (a case sets
layer_norm_eps, which DistilBERT ignores).

transformers 4.36.2 runs over Debian's torch 1.13 (build/hfvenv); 5.x needs
PyTorch 2.x (build/pt2venv with transformers 5: make caption-hf-conformance-v5).
"""
import os

from transformers import (DistilBertConfig, DistilBertForMaskedLM, DistilBertForQuestionAnswering,
                          DistilBertForSequenceClassification, DistilBertForTokenClassification, DistilBertModel)

import fixture_cli

ARCHS = {"DistilBertModel": DistilBertModel, "DistilBertForMaskedLM": DistilBertForMaskedLM,
         "DistilBertForSequenceClassification": DistilBertForSequenceClassification,
         "DistilBertForTokenClassification": DistilBertForTokenClassification,
         "DistilBertForQuestionAnswering": DistilBertForQuestionAnswering}
OUT = {"DistilBertModel": ("last_hidden_state",), "DistilBertForMaskedLM": ("logits", "loss"),
       "DistilBertForSequenceClassification": ("logits", "loss"),
       "DistilBertForTokenClassification": ("logits", "loss"),
       "DistilBertForQuestionAnswering": ("start_logits", "end_logits", "loss")}
WSTD = 0.3


def cfg(V, C, L, H, F, P, **kw):
    return dict(vocab_size=V, dim=C, n_layers=L, n_heads=H, hidden_dim=F, max_position_embeddings=P, **kw)


# (major version, name, architecture, config, inputs). Inputs: B, T; pad ("right" /
# "left": pad_token_id and attention_mask 0 there; "inside": pad_token_id at random
# places, attended to); positions (given position_ids, 5.x); labels; ids_dtype.
CASES = [
    (4, "v4_body_rightpad", "DistilBertModel", cfg(23, 12, 2, 3, 20, 14), dict(B=3, T=9, pad="right")),
    (4, "v4_body_leftpad_pad3_sinusoidal", "DistilBertModel",
     cfg(19, 10, 2, 2, 14, 16, pad_token_id=3, sinusoidal_pos_embds=True, layer_norm_eps=1e-3),
     dict(B=3, T=8, pad="left")),
    (4, "v4_mlm_tied_relu_labels_grad", "DistilBertForMaskedLM", cfg(21, 8, 2, 2, 12, 12, activation="relu"),
     dict(B=2, T=7, pad="inside", labels=True)),
    (4, "v4_mlm_untied_gelunew", "DistilBertForMaskedLM", cfg(17, 9, 1, 3, 7, 12, tie_word_embeddings=False,
                                                             activation="gelu_new"),
     dict(B=2, T=6, pad="right", labels=True, ids_dtype="int32")),
    (4, "v4_seqcls_3labels_grad", "DistilBertForSequenceClassification", cfg(25, 12, 2, 4, 10, 13, num_labels=3),
     dict(B=4, T=9, pad="inside", labels=True)),
    (4, "v4_seqcls_regression", "DistilBertForSequenceClassification", cfg(19, 8, 1, 2, 16, 10, num_labels=1),
     dict(B=3, T=6, pad="right", labels=True)),
    (4, "v4_tokcls_pad_inside_grad", "DistilBertForTokenClassification", cfg(13, 15, 2, 5, 9, 14, num_labels=4,
                                                                           pad_token_id=2),
     dict(B=3, T=10, pad="inside", labels=True)),
    (4, "v4_qa_clamped", "DistilBertForQuestionAnswering", cfg(21, 6, 3, 2, 10, 12), dict(B=3, T=9, pad="right",
                                                                                         labels=True)),
    (5, "v5_body_rightpad_posids", "DistilBertModel", cfg(27, 10, 2, 5, 13, 14), dict(B=2, T=11, pad="right",
                                                                                     positions=True)),
    (5, "v5_mlm_untied_labels", "DistilBertForMaskedLM", cfg(17, 12, 2, 4, 8, 12, tie_word_embeddings=False),
     dict(B=3, T=8, pad="right", labels=True)),
    (5, "v5_seqcls_leftpad_padnull_grad", "DistilBertForSequenceClassification",
     cfg(23, 9, 1, 1, 5, 12, num_labels=2, pad_token_id=None), dict(B=3, T=9, pad="left", labels=True)),
    (5, "v5_qa_pad_inside_sinusoidal", "DistilBertForQuestionAnswering",
     cfg(15, 16, 1, 2, 11, 12, sinusoidal_pos_embds=True), dict(B=2, T=8, pad="inside", labels=True)),
    (5, "v5_tokcls_rightpad_labels", "DistilBertForTokenClassification", cfg(14, 8, 2, 2, 10, 10, num_labels=3),
     dict(B=2, T=7, pad="right", labels=True)),
]


def make_inputs(c, arch, spec, g):
    pad = c.pad_token_id if c.pad_token_id is not None else 0  # [PAD] is 0 where no pad_token_id is set
    return fixture_cli.bert_like_inputs(c, arch, spec, g, pad, inside=((0, 1),))


def reference(model, arch, x, train=False):
    """transformers' outputs (or, with train, the loss's gradients)."""
    out = fixture_cli.double_forward(ARCHS[arch], model, x, train)
    return out if train else fixture_cli.fields(out, OUT[arch])


def write_case(out, name, arch, cfg_kw, spec, seed):
    g = fixture_cli.seeded(seed)
    c = DistilBertConfig(dropout=0.0, attention_dropout=0.0, qa_dropout=0.0, seq_classif_dropout=0.0, **cfg_kw)
    model = ARCHS[arch](c).eval()
    # 5.x's sinusoidal table is the sinusoid: kept (4.x's is random already)
    keep = ("position_embeddings",) if c.sinusoidal_pos_embds and fixture_cli.major_version() >= 5 else ()
    fixture_cli.init_bert_like(model, g, WSTD, keep=keep)
    fixture_cli.save_case(out, name, model, arch, make_inputs(c, arch, spec, g),
                          lambda x, train=False: reference(model, arch, x, train), name.endswith("_grad"))


def random_case(r):
    arch, heads, T = fixture_cli.random_shape(r, ARCHS)
    kw = fixture_cli.random_head(r, arch, dict(activation=r.choice(["gelu", "gelu_new", "relu"]),
                                               pad_token_id=r.choice([0, 0, 1, 3, None]),
                                               sinusoidal_pos_embds=r.random() < 0.2))
    c = cfg(r.randint(5, 40), heads * r.randint(1, 5), r.randint(1, 3), heads, r.randint(1, 20), T + r.randint(0, 4),
            **kw)
    spec = dict(B=r.randint(2, 4), T=T, pad=r.choice([None, "right", "left", "inside"]) if T >= 3 else None,
                positions=fixture_cli.major_version() >= 5 and r.random() < 0.2,
                labels=arch != "DistilBertModel" and r.random() < 0.7, ids_dtype=r.choice(["int64", "int32"]))
    return arch, c, spec


def main():
    fixture_cli.run_by_major(CASES, write_case, random_case, ARCHS, reference)


if __name__ == "__main__":
    main()
