#!/usr/bin/env python3
"""DistilBERT model folders and their outputs, for `tformer hf-run` (tests/test_distilbert.c).

    python tests/ref/gen_distilbert_fixtures.py --out tests/fixtures_distilbert
        the committed cases written by the running transformers' major version
        (run it once with transformers 4.x and once with 5.x: each writes its own)

    python tests/ref/gen_distilbert_fixtures.py --random 12 --seed 1234 --out build/distilbert_fresh
        fresh random configurations and inputs (make distilbert-conformance)

    python tests/ref/gen_distilbert_fixtures.py --expected-for DIR
        folders tformer wrote (config.json, model.safetensors, input.safetensors):
        each loaded with from_pretrained, its outputs written as expected.safetensors

Each case is a folder: config.json and model.safetensors as save_pretrained
writes them (DistilBertConfig, F32), input.safetensors (tensors named as
forward()'s arguments) and expected.safetensors (the output fields by HF's
names), computed in float64 from the float32 weights and rounded once; cases
named *_grad also hold gradients.safetensors: the loss's gradient with
respect to every parameter (by its name), from float64 autograd.

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
PyTorch 2.x (/work/wt/venv).
"""
import os
import shutil

import torch
import transformers
from safetensors.torch import save_file
from transformers import (DistilBertConfig, DistilBertForMaskedLM, DistilBertForQuestionAnswering,
                          DistilBertForSequenceClassification, DistilBertForTokenClassification, DistilBertModel)

import fixture_cli

MAJOR = int(transformers.__version__.split(".")[0])
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
    B, T = spec["B"], spec["T"]
    pad = c.pad_token_id if c.pad_token_id is not None else 0  # [PAD] is 0 where no pad_token_id is set
    ids = torch.randint(0, c.vocab_size, (B, T), generator=g)
    ids[ids == pad] = (pad + 1) % c.vocab_size  # pad_token_id only where the case puts it
    x = {"input_ids": ids}
    real = torch.ones(B, T, dtype=torch.bool)
    if spec.get("pad") in ("right", "left"):
        mask = torch.ones(B, T, dtype=torch.int64)
        for b in range(1, B):  # row 0 whole; the others lose 1 .. T/2 tokens
            n = 1 + (b * 5) % (T // 2)
            if spec["pad"] == "right":
                mask[b, T - n:] = 0
            else:
                mask[b, :n] = 0
        ids[mask == 0] = pad
        x["attention_mask"] = mask
        real = mask.bool()
    elif spec.get("pad") == "inside":  # pad_token_id among the tokens, attended to (no mask)
        ids[torch.rand(B, T, generator=g) < 0.3] = pad
        ids[0, 1] = pad
    if spec.get("positions"):
        x["position_ids"] = torch.randint(0, c.max_position_embeddings, (B, T), generator=g)
    if spec.get("labels"):
        if arch == "DistilBertForSequenceClassification":
            x["labels"] = (torch.randn(B, generator=g) if c.num_labels == 1
                           else torch.randint(0, c.num_labels, (B,), generator=g))
        elif arch == "DistilBertForQuestionAnswering":  # some outside [0,T): clamped to T and ignored
            x["start_positions"] = torch.randint(-1, T + 2, (B,), generator=g)
            x["end_positions"] = torch.randint(0, T + 3, (B,), generator=g)
            x["start_positions"][0], x["end_positions"][0] = 0, T - 1
        else:
            n = c.vocab_size if arch == "DistilBertForMaskedLM" else c.num_labels
            lab = torch.randint(0, n, (B, T), generator=g)
            lab[torch.rand(B, T, generator=g) < 0.3] = -100
            lab[~real] = -100
            x["labels"] = lab
    if spec.get("ids_dtype") == "int32":
        for k in ("input_ids", "position_ids"):
            if k in x:
                x[k] = x[k].to(torch.int32)
    return x


def reference(model, arch, x, train=False):
    """transformers' outputs in float64 from the float32 weights, rounded once
    (and, with train, the loss's gradients by parameter name)."""
    m = ARCHS[arch](model.config)
    m.load_state_dict(model.state_dict())
    m = m.double()
    m.train(train)  # dropout is 0
    args = {k: (v.double() if v.is_floating_point() else v.long()) for k, v in x.items()}
    with torch.set_grad_enabled(train):
        out = m(**args)
    if train:
        out.loss.backward()
        return {k: p.grad.float().contiguous() for k, p in m.named_parameters() if p.grad is not None}
    return {k: getattr(out, k).float().contiguous() for k in OUT[arch] if getattr(out, k, None) is not None}


def write_case(out, name, arch, cfg_kw, spec, seed):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    c = DistilBertConfig(dropout=0.0, attention_dropout=0.0, qa_dropout=0.0, seq_classif_dropout=0.0, **cfg_kw)
    model = ARCHS[arch](c).eval()
    # 5.x's sinusoidal table is the sinusoid: kept (4.x's is random already)
    keep = ("position_embeddings",) if c.sinusoidal_pos_embds and MAJOR >= 5 else ()
    fixture_cli.init_bert_like(model, g, WSTD, keep=keep)
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    for extra in ("generation_config.json",):  # not read by hf-run
        if os.path.exists(os.path.join(d, extra)):
            os.remove(os.path.join(d, extra))
    x = make_inputs(c, arch, spec, g)
    save_file({k: v.contiguous() for k, v in x.items()}, os.path.join(d, "input.safetensors"))
    save_file(reference(model, arch, x), os.path.join(d, "expected.safetensors"))
    if name.endswith("_grad"):
        save_file(reference(model, arch, x, train=True), os.path.join(d, "gradients.safetensors"))
    print(f"wrote {d} ({arch}, transformers {transformers.__version__}; inputs {', '.join(x)})")


def random_case(r):
    arch = r.choice(sorted(ARCHS))
    heads = r.randint(1, 4)
    T = r.randint(2, 12)
    kw = dict(activation=r.choice(["gelu", "gelu_new", "relu"]), pad_token_id=r.choice([0, 0, 1, 3, None]),
              sinusoidal_pos_embds=r.random() < 0.2)
    if arch in ("DistilBertForSequenceClassification", "DistilBertForTokenClassification"):
        kw["num_labels"] = r.randint(1 if arch.endswith("SequenceClassification") else 2, 6)
    if arch == "DistilBertForMaskedLM" and r.random() < 0.3:
        kw["tie_word_embeddings"] = False
    c = cfg(r.randint(5, 40), heads * r.randint(1, 5), r.randint(1, 3), heads, r.randint(1, 20), T + r.randint(0, 4),
            **kw)
    spec = dict(B=r.randint(2, 4), T=T, pad=r.choice([None, "right", "left", "inside"]) if T >= 3 else None,
                positions=MAJOR >= 5 and r.random() < 0.2, labels=arch != "DistilBertModel" and r.random() < 0.7,
                ids_dtype=r.choice(["int64", "int32"]))
    return arch, c, spec


def expected_for(root):
    """transformers loads each folder tformer wrote and computes its outputs."""
    fixture_cli.expected_for(root, ARCHS, reference)


def main():
    cases = [case[1:] for case in CASES if case[0] == MAJOR]
    fixture_cli.run(cases, write_case, random_case, expected=expected_for, random_name=f"v{MAJOR}_random_{{:02d}}")


if __name__ == "__main__":
    main()
