#!/usr/bin/env python3
"""RoBERTa model folders and their outputs, for `tformer hf-run` (tests/test_roberta.c).

    python tests/ref/gen_roberta_fixtures.py --out tests/fixtures_roberta
        the committed cases of the running transformers' major version (run
        it with 4.x and with 5.x); --random N --seed S --out DIR, fresh ones
        (make roberta-conformance); --expected-for DIR, transformers' outputs
        for folders tformer wrote (fixture_cli.py)

A case is a folder as fixture_cli.save_case writes it (RobertaConfig, F32;
the outputs in float64, rounded once; *_grad cases with the loss's gradients).

What RoBERTa changes from BERT, and so what the inputs exercise: positions are
made from input_ids when position_ids are not given (pad_token_id + 1 + the
count of tokens that are not pad_token_id so far; pad_token_id at padding),
so padded rows hold pad_token_id where attention_mask is 0, one case has
pad_token_id inside rows without a mask, and one a pad_token_id other than 1;
the MLM head is erf GELU whatever hidden_act says (a relu case); the
sequence classifier is dense + tanh + out_proj on the first token.

transformers 4.36.2 runs over Debian's torch 1.13 (build/hfvenv); 5.x needs
PyTorch 2.x (build/pt2venv with transformers 5: make caption-hf-conformance-v5).

With TF_XLMR=1 the same for XLM-RoBERTa (XLMRobertaConfig, XLMRobertaModel and
XLMRobertaFor*: RoBERTa's arithmetic under other names): CASES_XLMR, written
to tests/fixtures_xlmr.
"""
import os

from transformers import (RobertaConfig, RobertaForMaskedLM, RobertaForQuestionAnswering,
                          RobertaForSequenceClassification, RobertaForTokenClassification, RobertaModel)

import fixture_cli

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
    # pad_token_id at both ends of row 0 too when inside
    return fixture_cli.bert_like_inputs(c, arch, spec, g, c.pad_token_id, inside=((0, 0), (0, spec["T"] - 1)))


def build(arch, config, pooler=True):
    return ARCHS[arch](config, add_pooling_layer=pooler) if base(arch) == "RobertaModel" else ARCHS[arch](config)


def reference(model, arch, x, train=False):
    """transformers' outputs (or, with train, the loss's gradients)."""
    out = fixture_cli.double_forward(lambda c: build(arch, c, getattr(model, "pooler", None) is not None), model, x,
                                     train)
    return out if train else fixture_cli.fields(out, OUT[arch])


def write_case(out, name, arch, cfg_kw, spec, seed):
    g = fixture_cli.seeded(seed)
    c = Config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **cfg_kw)
    model = build(arch, c, spec.get("pooler", True)).eval()
    fixture_cli.init_bert_like(model, g, WSTD)
    fixture_cli.save_case(out, name, model, arch, make_inputs(c, arch, spec, g),
                          lambda x, train=False: reference(model, arch, x, train), name.endswith("_grad"))


def random_case(r):
    arch, heads, T = fixture_cli.random_shape(r, ARCHS)
    pad = r.choice([1, 1, 0, 2])
    kw = fixture_cli.random_head(r, arch, dict(hidden_act=r.choice(["gelu", "gelu_new", "relu"]), pad_token_id=pad,
                                               layer_norm_eps=r.choice([1e-12, 1e-5, 1e-3]),
                                               type_vocab_size=r.choice([1, 1, 2])))
    c = cfg(r.randint(pad + 3, 40), heads * r.randint(1, 5), r.randint(1, 3), heads, r.randint(1, 20),
            T + pad + 1 + r.randint(0, 4), **kw)
    spec = dict(B=r.randint(2, 4), T=T, pad=r.choice([None, "right", "left", "inside"]) if T >= 3 else None,
                types=kw["type_vocab_size"] > 1 and r.random() < 0.6, positions=r.random() < 0.2,
                labels=base(arch) != "RobertaModel" and r.random() < 0.7, pooler=r.random() < 0.5,
                ids_dtype=r.choice(["int64", "int32"]))
    return arch, c, spec


def main():
    fixture_cli.run_by_major(CASES_XLMR if XLM else CASES, write_case, random_case, ARCHS, reference)


if __name__ == "__main__":
    main()
