#!/usr/bin/env python3
"""Hugging Face model folders and their outputs, for `tformer hf-run` (tests/test_hf_run.c).

    python tests/ref/gen_hf_fixtures.py --out tests/fixtures_hf
        the committed cases written by the running transformers' major version
        (run it once with transformers 4.x and once with 5.x: each writes its own)

    python tests/ref/gen_hf_fixtures.py --random 12 --seed 1234 --out build/hf_fresh
        fresh random configurations and inputs (make hf-conformance)

    python tests/ref/gen_hf_fixtures.py --expected-for DIR
        folders tformer wrote (config.json, model.safetensors, input.safetensors):
        each loaded with from_pretrained, its outputs written as expected.safetensors
        (make hf-conformance then runs them through hf-run)

Each case is a folder: config.json and model.safetensors as save_pretrained
writes them, input.safetensors (tensors named as forward()'s arguments) and
expected.safetensors (the output fields Hugging Face returns, by its names:
logits and loss for GPT2LMHeadModel, last_hidden_state for GPT2Model).
Weights are N(0, 0.3) so that every path matters; the outputs are computed in
float64 from the float32 weights (model.double()) and rounded once.

Left padding: a query whose every visible key is padding gets a mean of the
values in Hugging Face (it masks with finfo.min, not -inf) and zeros in
tformer, so the test compares only the rows that see at least one real token;
labels of the tokens those rows predict are set to -100 so that the loss does
not depend on them.

transformers 4.36.2 runs over Debian's torch 1.13 (build/hfvenv);
5.x needs PyTorch 2.x (build/pt2venv with transformers 5).
"""
import math
import os

import torch
import torch.nn.functional as F
from transformers import (BertConfig, BertForMaskedLM, BigBirdConfig, BigBirdModel, BertForPreTraining, BertForQuestionAnswering,
                          BertForSequenceClassification, BertForTokenClassification, BertModel, GPT2Config,
                          GPT2LMHeadModel, GPT2Model)

import fixture_cli

GPT2_ARCHS = {"GPT2LMHeadModel": GPT2LMHeadModel, "GPT2Model": GPT2Model}
BERT_ARCHS = {"BertModel": BertModel, "BertForPreTraining": BertForPreTraining, "BertForMaskedLM": BertForMaskedLM,
              "BertForSequenceClassification": BertForSequenceClassification,
              "BertForTokenClassification": BertForTokenClassification,
              "BertForQuestionAnswering": BertForQuestionAnswering,
              "BigBirdModel": BigBirdModel}  # attention_type original_full: BERT's arithmetic
ARCHS = {**GPT2_ARCHS, **BERT_ARCHS}
BERT_OUT = {"BertModel": ("last_hidden_state", "pooler_output"), "BigBirdModel": ("last_hidden_state", "pooler_output"),
            "BertForPreTraining": ("prediction_logits", "seq_relationship_logits", "loss"),
            "BertForMaskedLM": ("logits", "loss"), "BertForSequenceClassification": ("logits", "loss"),
            "BertForTokenClassification": ("logits", "loss"),
            "BertForQuestionAnswering": ("start_logits", "end_logits", "loss")}


# The committed cases: (major version that writes it, name, architecture, config, inputs).
# Inputs: ids (dtype), mask (None, "right" or "left"; mask_dtype), pos (None,
# "offset": consecutive from a random start, "random": any in range), types
# (token_type_ids), labels. The outputs are forward()'s default call: 5.x given
# use_cache=False reads position_ids that jump, without an attention_mask, as
# packed sequences; by default (use_cache=True) it attends across the row as 4.x.
CASES = [
    (4, "v4_lm_tanh_labels", "GPT2LMHeadModel",
     dict(vocab_size=37, n_positions=16, n_embd=12, n_layer=2, n_head=3),
     dict(B=2, T=9, labels=True)),
    # sharded folders (model.safetensors.index.json and its shards, each under 4 KB)
    (4, "v4_lm_sharded_labels", "GPT2LMHeadModel",
     dict(vocab_size=33, n_positions=12, n_embd=12, n_layer=2, n_head=2),
     dict(B=2, T=7, labels=True, shard="4KB")),
    (4, "v4_bert_mlm_sharded", "BertForMaskedLM",
     dict(vocab_size=29, max_position_embeddings=12, hidden_size=12, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=16),
     dict(B=2, T=8, mask="right", labels=True, shard="4KB")),
    (4, "v4_lm_relu_untied_rightpad", "GPT2LMHeadModel",
     dict(vocab_size=29, n_positions=12, n_embd=10, n_layer=1, n_head=2, n_inner=18,
          activation_function="relu", tie_word_embeddings=False),
     dict(B=3, T=8, mask="right", labels=True)),
    (4, "v4_lm_gelu_leftpad_eps", "GPT2LMHeadModel",
     dict(vocab_size=41, n_positions=14, n_embd=15, n_layer=3, n_head=5, activation_function="gelu",
          layer_norm_epsilon=1e-3),
     dict(B=3, T=10, mask="left", mask_dtype="bool", labels=True)),
    (4, "v4_body_posids_types_int32", "GPT2Model",
     dict(vocab_size=23, n_positions=20, n_embd=9, n_layer=2, n_head=1, n_inner=7),
     dict(B=2, T=6, ids_dtype="int32", pos="offset", types=True)),
    (4, "v4_body_untied_leftpad", "GPT2Model",
     dict(vocab_size=17, n_positions=9, n_embd=10, n_layer=2, n_head=2, activation_function="gelu",
          tie_word_embeddings=False),
     dict(B=3, T=9, mask="left", mask_dtype="int32")),
    (5, "v5_lm_untied_pytorch_tanh_labels", "GPT2LMHeadModel",
     dict(vocab_size=31, n_positions=12, n_embd=14, n_layer=2, n_head=7,
          activation_function="gelu_pytorch_tanh", tie_word_embeddings=False),
     dict(B=2, T=12, labels=True)),
    (5, "v5_lm_leftpad_posids", "GPT2LMHeadModel",
     dict(vocab_size=19, n_positions=16, n_embd=8, n_layer=2, n_head=2, layer_norm_epsilon=1e-6),
     dict(B=3, T=7, mask="left", pos="random", labels=True)),
    (5, "v5_body_rightpad_types", "GPT2Model",
     dict(vocab_size=27, n_positions=10, n_embd=12, n_layer=3, n_head=4, activation_function="relu", n_inner=5),
     dict(B=2, T=10, mask="right", mask_dtype="float32", types=True)),
    (5, "v5_lm_posids_jump", "GPT2LMHeadModel",
     dict(vocab_size=45, n_positions=18, n_embd=6, n_layer=1, n_head=3, activation_function="gelu"),
     dict(B=2, T=8, pos="random", labels=True)),
    # BERT: bidirectional, so padded queries still see the real keys and every row is compared
    (4, "v4_bert_body_rightpad_types", "BertModel",
     dict(vocab_size=31, max_position_embeddings=16, hidden_size=12, num_hidden_layers=2, num_attention_heads=3,
          intermediate_size=20, type_vocab_size=3),
     dict(B=3, T=9, mask="right", types=True)),
    (4, "v4_bert_pretraining_labels", "BertForPreTraining",
     dict(vocab_size=29, max_position_embeddings=12, hidden_size=10, num_hidden_layers=2, num_attention_heads=2,
          intermediate_size=14, layer_norm_eps=1e-5),
     dict(B=2, T=8, mask="left", mask_dtype="bool", types=True, labels=True)),
    (4, "v4_bert_mlm_untied_relu_posids", "BertForMaskedLM",
     dict(vocab_size=23, max_position_embeddings=14, hidden_size=9, num_hidden_layers=1, num_attention_heads=3,
          intermediate_size=7, hidden_act="relu", tie_word_embeddings=False),
     dict(B=2, T=7, pos="random", labels=True, ids_dtype="int32")),
    (4, "v4_bert_seqcls_5labels", "BertForSequenceClassification",
     dict(vocab_size=27, max_position_embeddings=10, hidden_size=14, num_hidden_layers=2, num_attention_heads=7,
          intermediate_size=11, num_labels=5),
     dict(B=4, T=10, mask="right", types=True, labels=True)),
    (4, "v4_bert_regression", "BertForSequenceClassification",
     dict(vocab_size=19, max_position_embeddings=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
          intermediate_size=16, num_labels=1, hidden_act="gelu_new"),
     dict(B=3, T=6, labels=True)),
    (4, "v4_bert_token_cls", "BertForTokenClassification",
     dict(vocab_size=25, max_position_embeddings=12, hidden_size=15, num_hidden_layers=2, num_attention_heads=5,
          intermediate_size=9, num_labels=4, layer_norm_eps=1e-3),
     dict(B=2, T=11, mask="left", mask_dtype="float32", labels=True)),
    (4, "v4_bert_qa_clamped", "BertForQuestionAnswering",
     dict(vocab_size=21, max_position_embeddings=12, hidden_size=6, num_hidden_layers=3, num_attention_heads=2,
          intermediate_size=10),
     dict(B=3, T=9, mask="right", types=True, labels=True)),
    (4, "v4_bigbird_full_rightpad_types", "BigBirdModel",
     dict(vocab_size=29, max_position_embeddings=16, hidden_size=12, num_hidden_layers=2, num_attention_heads=3,
          intermediate_size=18, type_vocab_size=2, hidden_act="gelu_new"),
     dict(B=3, T=10, mask="right", types=True)),
    (5, "v5_bert_body_leftpad", "BertModel",
     dict(vocab_size=33, max_position_embeddings=12, hidden_size=10, num_hidden_layers=2, num_attention_heads=5,
          intermediate_size=13),
     dict(B=2, T=12, mask="left", types=True)),
    (5, "v5_bert_mlm_labels", "BertForMaskedLM",
     dict(vocab_size=17, max_position_embeddings=10, hidden_size=12, num_hidden_layers=2, num_attention_heads=4,
          intermediate_size=8),
     dict(B=3, T=8, mask="right", labels=True)),
    (5, "v5_bert_seqcls_types", "BertForSequenceClassification",
     dict(vocab_size=23, max_position_embeddings=9, hidden_size=9, num_hidden_layers=1, num_attention_heads=1,
          intermediate_size=5, num_labels=3, type_vocab_size=4),
     dict(B=3, T=9, types=True, labels=True)),
]


def padding_mask(g, B, T, side):
    """(B,T) int64, 1 = token: rows of random lengths, at least one padded row."""
    mask = torch.zeros(B, T, dtype=torch.int64)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    lengths[0] = T  # one full row
    lengths[-1] = min(int(lengths[-1]), T - 2)  # one padded row
    for b, n in enumerate(lengths.tolist()):
        if side == "right":
            mask[b, :n] = 1
        else:
            mask[b, T - n:] = 1
    return mask


def bert_labels(g, arch, cfg, B, T, x, mask):
    """The labels of each BertFor* head: classes with some -100, float values for regression."""
    if arch in ("BertForPreTraining", "BertForMaskedLM", "BertForTokenClassification"):
        n = cfg.vocab_size if arch != "BertForTokenClassification" else cfg.num_labels
        x["labels"] = fixture_cli.token_labels(n, B, T, g)
        if arch == "BertForPreTraining":
            x["next_sentence_label"] = torch.randint(0, 2, (B,), generator=g)
    elif arch == "BertForSequenceClassification":
        x["labels"] = fixture_cli.class_labels(cfg, B, g)
    elif arch == "BertForQuestionAnswering":
        fixture_cli.clamped_spans(x, B, T, g)


def make_bert_inputs(g, arch, cfg, spec):
    B, T = spec["B"], spec["T"]
    x = {"input_ids": torch.randint(0, cfg.vocab_size, (B, T), generator=g)}
    mask = padding_mask(g, B, T, spec["mask"]) if spec.get("mask") else None
    if mask is not None:
        x["attention_mask"] = mask
    if spec.get("types"):
        x["token_type_ids"] = torch.randint(0, cfg.type_vocab_size, (B, T), generator=g)
    if spec.get("pos") == "offset":
        x["position_ids"] = torch.randint(0, cfg.max_position_embeddings - T + 1, (B, 1), generator=g) + torch.arange(T)
    elif spec.get("pos") == "random":
        x["position_ids"] = torch.randint(0, cfg.max_position_embeddings, (B, T), generator=g)
    if spec.get("labels"):
        bert_labels(g, arch, cfg, B, T, x, mask)
    if spec.get("ids_dtype") == "int32":
        for k in ("input_ids", "position_ids", "token_type_ids"):
            if k in x:
                x[k] = x[k].to(torch.int32)
    if mask is not None and spec.get("mask_dtype"):
        x["attention_mask"] = mask.to(getattr(torch, spec["mask_dtype"]))
    return x


def make_inputs(g, cfg, spec, arch):
    if arch in BERT_ARCHS:
        return make_bert_inputs(g, arch, cfg, spec)
    B, T, V, P = spec["B"], spec["T"], cfg.vocab_size, cfg.n_positions
    x = {"input_ids": torch.randint(0, V, (B, T), generator=g)}
    mask = padding_mask(g, B, T, spec["mask"]) if spec.get("mask") else None
    if mask is not None:
        x["attention_mask"] = mask
    if spec.get("pos") == "offset":
        start = torch.randint(0, P - T + 1, (B, 1), generator=g)
        x["position_ids"] = start + torch.arange(T)
    elif spec.get("pos") == "random":
        x["position_ids"] = torch.randint(0, P, (B, T), generator=g)
    if spec.get("types"):
        x["token_type_ids"] = torch.randint(0, V, (B, T), generator=g)
    if spec.get("labels"):
        labels = torch.randint(0, V, (B, T), generator=g)
        labels[torch.rand(B, T, generator=g) < 0.2] = -100
        if mask is not None:
            labels[mask == 0] = -100
            # the label at t is predicted by row t-1: -100 where that row sees only padding
            seen = mask.cumsum(1)
            labels[:, 1:][seen[:, :-1] == 0] = -100
        x["labels"] = labels
    if spec.get("ids_dtype") == "int32":
        for k in ("input_ids", "position_ids", "token_type_ids"):
            if k in x:
                x[k] = x[k].to(torch.int32)
    if mask is not None and spec.get("mask_dtype"):
        x["attention_mask"] = mask.to(getattr(torch, spec["mask_dtype"]))
    return x


def reference(model, arch, x):
    """Hugging Face's outputs in float64 from the float32 weights, rounded once."""
    m = ARCHS[arch](model.config)
    m.load_state_dict(model.state_dict())
    m = m.double().eval()
    args = {k: (v.long() if v.dtype == torch.int32 else v) for k, v in x.items()}
    with torch.no_grad():
        out = m(**args)
    if arch in BERT_ARCHS:
        return {k: getattr(out, k).float() for k in BERT_OUT[arch] if getattr(out, k, None) is not None}
    if arch == "GPT2Model":
        return {"last_hidden_state": out.last_hidden_state.float()}
    res = {"logits": out.logits.float()}
    if "labels" in x:
        # the loss as Hugging Face defines it (logits[:, :-1] against labels[:, 1:], -100
        # ignored), in float64: 5.x computes it from float32 logits; check that it agrees
        V = out.logits.shape[-1]
        loss = F.cross_entropy(out.logits[:, :-1].reshape(-1, V), args["labels"][:, 1:].reshape(-1),
                               ignore_index=-100)
        if math.isnan(float(loss)):  # every label ignored: NaN in both (hf-run writes NaN too)
            assert math.isnan(float(out.loss)), "transformers gives a loss where every label is ignored"
        else:
            err = abs(float(out.loss) - float(loss)) / abs(float(loss))
            assert err < 1e-6, f"our loss formula differs from transformers' by {err:.2e}"
        res["loss"] = loss.float()
    return res


def write_case(out, name, arch, cfg_kw, spec, seed):
    spec = dict(spec)
    shard = spec.pop("shard", None)  # save_pretrained's max_shard_size: a sharded folder
    torch.manual_seed(seed)
    if arch == "BigBirdModel":
        cfg = BigBirdConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=0,
                            attention_type="original_full", **cfg_kw)
    elif arch in BERT_ARCHS:
        cfg = BertConfig(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=0, **cfg_kw)
    else:
        # bos/eos: GPT-2's 50256 is outside these vocabularies (a 5.x warning); forward() does not read them
        cfg = GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0, **cfg_kw)
    model = ARCHS[arch](cfg).eval()
    with torch.no_grad():  # larger than the default 0.02 so that every path matters
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    g = torch.Generator().manual_seed(seed + 1)
    fixture_cli.save_case(out, name, model, arch, make_inputs(g, cfg, spec, arch), lambda x: reference(model, arch, x),
                          shard=shard)


def random_bert_case(r, arch):
    n_head = r.randint(1, 4)
    T = r.randint(2, 12)
    cfg = dict(vocab_size=r.randint(5, 60), max_position_embeddings=T + r.randint(0, 6),
               hidden_size=n_head * r.randint(1, 5), num_hidden_layers=r.randint(1, 3), num_attention_heads=n_head,
               intermediate_size=r.randint(1, 24), type_vocab_size=r.randint(1, 3),
               hidden_act=r.choice(["gelu", "gelu_new", "relu"]), layer_norm_eps=r.choice([1e-12, 1e-5, 1e-3]))
    if arch in ("BertForSequenceClassification", "BertForTokenClassification"):
        cfg["num_labels"] = r.randint(1 if arch == "BertForSequenceClassification" else 2, 6)
    if r.random() < 0.3 and arch in ("BertForPreTraining", "BertForMaskedLM"):
        cfg["tie_word_embeddings"] = False
    spec = dict(B=r.randint(2, 4), T=T, mask=r.choice([None, "right", "left"]) if T >= 3 else None,
                types=r.random() < 0.6, pos=r.choice([None, None, "offset", "random"]),
                labels=arch != "BertModel" and r.random() < 0.7, ids_dtype=r.choice(["int64", "int32"]))
    if spec["mask"]:
        spec["mask_dtype"] = r.choice(["int64", "int32", "bool", "float32"])
    return arch, cfg, spec


def random_case(r):
    """A random configuration and input set; (arch, config, inputs)."""
    arch = r.choice(sorted(ARCHS))
    if arch in BERT_ARCHS:
        return random_bert_case(r, arch)
    n_head = r.randint(1, 4)
    T = r.randint(2, 12)
    cfg = dict(vocab_size=r.randint(5, 60), n_positions=T + r.randint(0, 6), n_embd=n_head * r.randint(1, 5),
               n_layer=r.randint(1, 3), n_head=n_head,
               activation_function=r.choice(["gelu_new", "gelu_pytorch_tanh", "gelu", "relu"]),
               layer_norm_epsilon=r.choice([1e-5, 1e-3, 1e-6]))
    if r.random() < 0.5:
        cfg["n_inner"] = r.randint(1, 20)
    if r.random() < 0.5:  # GPT2Model: only config.json says so (no lm_head either way)
        cfg["tie_word_embeddings"] = False
    spec = dict(B=r.randint(1, 3), T=T)
    spec["mask"] = r.choice([None, "right", "left"]) if T >= 3 else None
    if spec["mask"]:
        spec["mask_dtype"] = r.choice(["int64", "int32", "bool", "float32"])
    spec["pos"] = r.choice([None, "offset", "random"])
    spec["types"] = r.random() < 0.4
    spec["labels"] = arch == "GPT2LMHeadModel" and r.random() < 0.6
    spec["ids_dtype"] = r.choice(["int64", "int32"])
    if spec["mask"] and spec["B"] < 2:  # one full row and one padded row
        spec["B"] = 2
    return arch, cfg, spec


def main():
    fixture_cli.run_by_major(CASES, write_case, random_case, ARCHS, reference)


if __name__ == "__main__":
    main()
