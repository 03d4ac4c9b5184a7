#!/usr/bin/env python3
"""RoBERTa model folders and their outputs, for `tformer hf-run` (tests/test_roberta.c).

    python tests/ref/gen_roberta_fixtures.py --out tests/fixtures_roberta
        the committed cases written by the running transformers' major version
        (run it once with transformers 4.x and once with 5.x: each writes its own)

    python tests/ref/gen_roberta_fixtures.py --random 12 --seed 1234 --out build/roberta_fresh
        fresh random configurations and inputs (make roberta-conformance)

    python tests/ref/gen_roberta_fixtures.py --expected-for DIR
        folders tformer wrote (config.json, model.safetensors, input.safetensors):
        each loaded with from_pretrained, its outputs written as expected.safetensors

Each case is a folder: config.json and model.safetensors as save_pretrained
writes them (RobertaConfig, F32), input.safetensors (tensors named as
forward()'s arguments) and expected.safetensors (the output fields by HF's
names), computed in float64 from the float32 weights and rounded once; cases
named *_grad also hold gradients.safetensors: the loss's gradient with
respect to every parameter (by its name), from float64 autograd.

What RoBERTa changes from BERT, and so what the inputs exercise: positions are
made from input_ids when position_ids are not given (pad_token_id + 1 + the
count of tokens that are not pad_token_id so far; pad_token_id at padding),
so padded rows hold pad_token_id where attention_mask is 0, one case has
pad_token_id inside rows without a mask, and one a pad_token_id other than 1;
the MLM head is erf GELU whatever hidden_act says (a relu case); the
sequence classifier is dense + tanh + out_proj on the first token.

transformers 4.36.2 runs over Debian's torch 1.13 (build/hfvenv); 5.x needs
PyTorch 2.x (/work/wt/venv or /tmp/hf5).

With TF_XLMR=1 the same for XLM-RoBERTa (XLMRobertaConfig, XLMRobertaModel and
XLMRobertaFor*: RoBERTa's arithmetic under other names): CASES_XLMR, written
to tests/fixtures_xlmr.
"""
import os
import shutil

import torch
import transformers
from safetensors.torch import save_file
from transformers import (RobertaConfig, RobertaForMaskedLM, RobertaForQuestionAnswering,
                          RobertaForSequenceClassification, RobertaForTokenClassification, RobertaModel)

import fixture_cli

MAJOR = int(transformers.__version__.split(".")[0])
XLM = os.environ.get("TF_XLMR") == "1"
ARCHS = {"RobertaModel": RobertaModel, "RobertaForMaskedLM": RobertaForMaskedLM,
         "RobertaForSequenceClassification": RobertaForSequenceClassification,
         "RobertaForTokenClassification": RobertaForTokenClassification,
         "RobertaForQuestionAnswering": RobertaForQuestionAnswering}
OUT = {"RobertaModel": ("last_hidden_state", "pooler_output"), "RobertaForMaskedLM": ("logits", "loss"),
       "RobertaForSequenceClassification": ("logits", "loss"), "RobertaForTokenClassification": ("logits", "loss"),
       "RobertaForQuestionAnswering": ("start_logits", "end_logits", "loss")}
WSTD = 0.3
Config = RobertaConfig
if XLM:
    from transformers import (XLMRobertaConfig, XLMRobertaForMaskedLM, XLMRobertaForQuestionAnswering,
                              XLMRobertaForSequenceClassification, XLMRobertaForTokenClassification, XLMRobertaModel)
    ARCHS = {"XLMRobertaModel": XLMRobertaModel, "XLMRobertaForMaskedLM": XLMRobertaForMaskedLM,
             "XLMRobertaForSequenceClassification": XLMRobertaForSequenceClassification,
             "XLMRobertaForTokenClassification": XLMRobertaForTokenClassification,
             "XLMRobertaForQuestionAnswering": XLMRobertaForQuestionAnswering}
    OUT = {"XLM" + k: v for k, v in OUT.items()}
    Config = XLMRobertaConfig


def base(arch):
    """RoBERTa's class name of an XLM-RoBERTa one."""
    return arch[3:] if arch.startswith("XLM") else arch


def cfg(V, C, L, H, F, P, **kw):
    return dict(vocab_size=V, hidden_size=C, num_hidden_layers=L, num_attention_heads=H, intermediate_size=F,
                max_position_embeddings=P, type_vocab_size=kw.pop("type_vocab_size", 1), **kw)


# (major version, name, architecture, config, inputs). Inputs: B, T; pad ("right" /
# "left": pad_token_id and attention_mask 0 there; "inside": pad_token_id at random
# places, no mask); types; positions (given position_ids); labels; pooler (RobertaModel's
# add_pooling_layer); ids_dtype.
CASES = [
    (4, "v4_body_rightpad_pooler", "RobertaModel", cfg(23, 12, 2, 3, 20, 14),
     dict(B=3, T=9, pad="right", pooler=True)),
    (4, "v4_body_nopooler_leftpad_pad3_types", "RobertaModel", cfg(19, 10, 2, 2, 14, 16, pad_token_id=3,
                                                                  type_vocab_size=2, layer_norm_eps=1e-5),
     dict(B=3, T=8, pad="left", types=True, pooler=False)),
    (4, "v4_mlm_tied_relu_labels_grad", "RobertaForMaskedLM", cfg(21, 8, 2, 2, 12, 12, hidden_act="relu"),
     dict(B=2, T=7, pad="right", labels=True)),
    (4, "v4_mlm_untied_posids", "RobertaForMaskedLM", cfg(17, 9, 1, 3, 7, 12, tie_word_embeddings=False,
                                                          hidden_act="gelu_new"),
     dict(B=2, T=6, positions=True, labels=True, ids_dtype="int32")),
    (4, "v4_seqcls_3labels_grad", "RobertaForSequenceClassification", cfg(25, 12, 2, 4, 10, 13, num_labels=3),
     dict(B=4, T=9, pad="right", labels=True)),
    (4, "v4_seqcls_regression", "RobertaForSequenceClassification", cfg(19, 8, 1, 2, 16, 10, num_labels=1),
     dict(B=3, T=6, labels=True)),
    (4, "v4_tokcls_pad_inside_grad", "RobertaForTokenClassification", cfg(13, 15, 2, 5, 9, 14, num_labels=4,
                                                                        layer_norm_eps=1e-3),
     dict(B=3, T=10, pad="inside", labels=True)),
    (4, "v4_qa_clamped", "RobertaForQuestionAnswering", cfg(21, 6, 3, 2, 10, 12),
     dict(B=3, T=9, pad="right", labels=True)),
    (5, "v5_body_rightpad_pooler", "RobertaModel", cfg(27, 10, 2, 5, 13, 14), dict(B=2, T=11, pad="right", pooler=True)),
    (5, "v5_mlm_untied_labels", "RobertaForMaskedLM", cfg(17, 12, 2, 4, 8, 12, tie_word_embeddings=False),
     dict(B=3, T=8, pad="right", labels=True)),
    (5, "v5_seqcls_leftpad_labels", "RobertaForSequenceClassification", cfg(23, 9, 1, 1, 5, 12, num_labels=2),
     dict(B=3, T=9, pad="left", labels=True)),
    (5, "v5_qa_pad_inside", "RobertaForQuestionAnswering", cfg(15, 8, 2, 2, 11, 12), dict(B=2, T=8, pad="inside",
                                                                                         labels=True)),
]


# XLM-RoBERTa (TF_XLMR=1): one case per class and version, RoBERTa's inputs.
CASES_XLMR = [
    (4, "v4_body_rightpad_pooler", "XLMRobertaModel", cfg(29, 12, 2, 3, 20, 14), dict(B=3, T=9, pad="right", pooler=True)),
    (4, "v4_mlm_tied_labels_grad", "XLMRobertaForMaskedLM", cfg(21, 8, 2, 2, 12, 12), dict(B=2, T=7, pad="right", labels=True)),
    (4, "v4_seqcls_3labels_grad", "XLMRobertaForSequenceClassification", cfg(25, 12, 2, 4, 10, 13, num_labels=3),
     dict(B=4, T=9, pad="left", labels=True)),
    (4, "v4_tokcls_pad_inside", "XLMRobertaForTokenClassification", cfg(13, 15, 2, 5, 9, 14, num_labels=4),
     dict(B=3, T=10, pad="inside", labels=True)),
    (4, "v4_qa_clamped", "XLMRobertaForQuestionAnswering", cfg(21, 6, 3, 2, 10, 12), dict(B=3, T=9, pad="right", labels=True)),
    (5, "v5_body_nopooler_pad3_types", "XLMRobertaModel", cfg(19, 10, 2, 2, 14, 16, pad_token_id=3, type_vocab_size=2),
     dict(B=3, T=8, pad="left", types=True, pooler=False)),
    (5, "v5_mlm_untied_labels", "XLMRobertaForMaskedLM", cfg(17, 12, 2, 4, 8, 12, tie_word_embeddings=False),
     dict(B=3, T=8, pad="right", labels=True)),
    (5, "v5_seqcls_labels", "XLMRobertaForSequenceClassification", cfg(23, 9, 1, 1, 5, 12, num_labels=2),
     dict(B=3, T=9, pad="right", labels=True)),
]


def make_inputs(c, arch, spec, g):
    B, T, pad = spec["B"], spec["T"], c.pad_token_id
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
        ids[0, 0], ids[0, T - 1] = pad, pad
    if spec.get("types"):
        x["token_type_ids"] = torch.randint(0, c.type_vocab_size, (B, T), generator=g)
    if spec.get("positions"):
        x["position_ids"] = torch.randint(0, c.max_position_embeddings, (B, T), generator=g)
    if spec.get("labels"):
        if base(arch) == "RobertaForSequenceClassification":
            x["labels"] = (torch.randn(B, generator=g) if c.num_labels == 1
                           else torch.randint(0, c.num_labels, (B,), generator=g))
        elif base(arch) == "RobertaForQuestionAnswering":  # some outside [0,T): clamped to T and ignored
            x["start_positions"] = torch.randint(-1, T + 2, (B,), generator=g)
            x["end_positions"] = torch.randint(0, T + 3, (B,), generator=g)
            x["start_positions"][0], x["end_positions"][0] = 0, T - 1
        else:
            n = c.vocab_size if base(arch) == "RobertaForMaskedLM" else c.num_labels
            lab = torch.randint(0, n, (B, T), generator=g)
            lab[torch.rand(B, T, generator=g) < 0.3] = -100
            lab[~real] = -100
            x["labels"] = lab
    if spec.get("ids_dtype") == "int32":
        for k in ("input_ids", "position_ids", "token_type_ids"):
            if k in x:
                x[k] = x[k].to(torch.int32)
    return x


def build(arch, config, pooler=True):
    return ARCHS[arch](config, add_pooling_layer=pooler) if base(arch) == "RobertaModel" else ARCHS[arch](config)


def reference(model, arch, x, train=False):
    """transformers' outputs in float64 from the float32 weights, rounded once
    (and, with train, the loss's gradients by parameter name)."""
    m = build(arch, model.config, getattr(model, "pooler", None) is not None)
    m.load_state_dict(model.state_dict())
    m = m.double()
    m.train(train)  # dropout is 0
    args = {k: (v.double() if v.is_floating_point() else v.long()) for k, v in x.items()}
    with torch.set_grad_enabled(train):
        out = m(**args)
    if train:
        out.loss.backward()
        return {k: p.grad.float().contiguous() for k, p in m.named_parameters()}
    return {k: getattr(out, k).float().contiguous() for k in OUT[arch] if getattr(out, k, None) is not None}


def write_case(out, name, arch, cfg_kw, spec, seed):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    c = Config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **cfg_kw)
    model = build(arch, c, spec.get("pooler", True)).eval()
    fixture_cli.init_bert_like(model, g, WSTD)
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
    pad = r.choice([1, 1, 0, 2])
    kw = dict(hidden_act=r.choice(["gelu", "gelu_new", "relu"]), layer_norm_eps=r.choice([1e-12, 1e-5, 1e-3]),
              pad_token_id=pad, type_vocab_size=r.choice([1, 1, 2]))
    if base(arch) in ("RobertaForSequenceClassification", "RobertaForTokenClassification"):
        kw["num_labels"] = r.randint(1 if arch.endswith("SequenceClassification") else 2, 6)
    if base(arch) == "RobertaForMaskedLM" and r.random() < 0.3:
        kw["tie_word_embeddings"] = False
    c = cfg(r.randint(pad + 3, 40), heads * r.randint(1, 5), r.randint(1, 3), heads, r.randint(1, 20),
            T + pad + 1 + r.randint(0, 4), **kw)
    spec = dict(B=r.randint(2, 4), T=T, pad=r.choice([None, "right", "left", "inside"]) if T >= 3 else None,
                types=kw["type_vocab_size"] > 1 and r.random() < 0.6, positions=r.random() < 0.2,
                labels=base(arch) != "RobertaModel" and r.random() < 0.7, pooler=r.random() < 0.5,
                ids_dtype=r.choice(["int64", "int32"]))
    return arch, c, spec


def expected_for(root):
    """transformers loads each folder tformer wrote and computes its outputs."""
    fixture_cli.expected_for(root, ARCHS, reference)


def main():
    cases = [case[1:] for case in (CASES_XLMR if XLM else CASES) if case[0] == MAJOR]
    fixture_cli.run(cases, write_case, random_case, expected=expected_for, random_name=f"v{MAJOR}_random_{{:02d}}")


if __name__ == "__main__":
    main()
