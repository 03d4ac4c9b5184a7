#!/usr/bin/env python3
"""Hugging Face output-head fixtures for tests/test_heads.c (transformers + torch).

    python3 tests/ref/gen_heads_fixtures.py --out tests/fixtures_heads

Each case builds a tiny Hugging Face model (BertForPreTraining, BertForMaskedLM,
BertForSequenceClassification, BertForTokenClassification,
BertForQuestionAnswering, GPT2LMHeadModel) with random weights and runs only
its heads, through the model's own modules, on a fixed hidden-state tensor:

    config.json           the head's settings (sizes, activation, eps, tying)
    weights.safetensors   the parameters the heads use, under the model's names
    input.safetensors     hidden_states and grad_output.<output> per output
    expected.safetensors  every output and grad.<name> for hidden_states and each
                          parameter: the gradient of sum_o sum(o * grad_output.o)

The expected values are computed in float64 from the float32 weights and
inputs and rounded once to float32: the exact answer, not PyTorch's own
float32 rounding. Run with a Python that has torch and transformers 4.x
(Debian's python3-torch plus `pip install transformers==4.36.2` in a venv with
system site packages).
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file
from transformers import (BertConfig, BertForMaskedLM, BertForPreTraining, BertForQuestionAnswering,
                          BertForSequenceClassification, BertForTokenClassification, GPT2Config,
                          GPT2LMHeadModel)

B, T, D, V = 2, 5, 10, 23  # odd, non-power-of-two sizes; d_model 10 keeps LayerNorm well conditioned


def bert_config(**kw):
    base = dict(vocab_size=V, hidden_size=D, num_hidden_layers=1, num_attention_heads=2, intermediate_size=12,
                max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    base.update(kw)
    return BertConfig(**base)


def randomize_(model, g):
    """Weights far from the default 0.02 so that every path matters; LayerNorm weights around 1."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g)
            p.copy_(1.0 + 0.3 * r if "LayerNorm.weight" in name else 0.4 * r)


# Each case: (model class, config, names of the parameters the heads use, the
# heads' forward on (model, hidden) -> {output name: tensor}, hidden shape, settings).
def pretraining(m, h):
    pooled = m.bert.pooler(h)
    scores, nsp = m.cls(h, pooled)
    return {"pooled_output": pooled, "prediction_logits": scores, "seq_relationship_logits": nsp}


def masked_lm(m, h):
    return {"logits": m.cls(h)}


def seq_cls(m, h):
    return {"logits": m.classifier(m.dropout(m.bert.pooler(h)))}


def token_cls(m, h):
    return {"logits": m.classifier(m.dropout(h))}


def qa(m, h):
    start, end = m.qa_outputs(h).split(1, dim=-1)
    return {"start_logits": start.squeeze(-1).contiguous(), "end_logits": end.squeeze(-1).contiguous()}


def gpt2_lm(m, h):
    return {"logits": m.lm_head(h)}


MLM_PARAMS = ["cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
              "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
              "cls.predictions.bias"]
POOLER = ["bert.pooler.dense.weight", "bert.pooler.dense.bias"]
CASES = {
    "bert_pretraining": (BertForPreTraining, bert_config(hidden_act="gelu"),
                         POOLER + MLM_PARAMS + ["bert.embeddings.word_embeddings.weight",
                                                "cls.seq_relationship.weight", "cls.seq_relationship.bias"],
                         pretraining, (B, T, D), dict(hidden_act="gelu", layer_norm_eps=1e-12, tied=True)),
    "bert_mlm_untied_gelu_new": (BertForMaskedLM, bert_config(hidden_act="gelu_new", layer_norm_eps=1e-5,
                                                              tie_word_embeddings=False),
                                 MLM_PARAMS + ["cls.predictions.decoder.weight"], masked_lm, (B, T, D),
                                 dict(hidden_act="gelu_new", layer_norm_eps=1e-5, tied=False)),
    # the masked positions gathered as (N,d_model), as a pre-training loop feeds them
    "bert_mlm_relu_gathered": (BertForMaskedLM, bert_config(hidden_act="relu"),
                               MLM_PARAMS + ["bert.embeddings.word_embeddings.weight"], masked_lm, (7, D),
                               dict(hidden_act="relu", layer_norm_eps=1e-12, tied=True)),
    "bert_seq_cls": (BertForSequenceClassification, bert_config(num_labels=3),
                     POOLER + ["classifier.weight", "classifier.bias"], seq_cls, (B, T, D), dict(n_labels=3)),
    "bert_token_cls": (BertForTokenClassification, bert_config(num_labels=5),
                       ["classifier.weight", "classifier.bias"], token_cls, (B, T, D), dict(n_labels=5)),
    "bert_qa": (BertForQuestionAnswering, bert_config(), ["qa_outputs.weight", "qa_outputs.bias"], qa, (B, T, D),
                dict()),
    "gpt2_lm_tied": (GPT2LMHeadModel, GPT2Config(vocab_size=V, n_positions=16, n_embd=D, n_layer=1, n_head=2),
                     ["transformer.wte.weight"], gpt2_lm, (B, T, D), dict(tied=True)),
    "gpt2_lm_untied": (GPT2LMHeadModel, GPT2Config(vocab_size=V, n_positions=16, n_embd=D, n_layer=1, n_head=2,
                                                   tie_word_embeddings=False),
                       ["lm_head.weight"], gpt2_lm, (B, T, D), dict(tied=False)),
}


def generate(out):
    for i, (name, (cls, cfg, params, heads, hshape, settings)) in enumerate(sorted(CASES.items())):
        torch.manual_seed(200 + i)
        g = torch.Generator().manual_seed(300 + i)
        model = cls(cfg).eval()  # eval: the classifiers' dropout is the identity here
        randomize_(model, g)
        weights = {p: model.get_parameter(p).detach().clone().contiguous() for p in params}
        hidden = torch.randn(hshape, generator=g)
        model.double()  # the parameters stay the same objects: ties survive
        h = hidden.double().requires_grad_(True)
        outs = heads(model, h)
        grad_out = {k: torch.randn(v.shape, generator=g) for k, v in outs.items()}
        sum((o * grad_out[k].double()).sum() for k, o in outs.items()).backward()
        expected = {k: v.detach().float() for k, v in outs.items()}
        expected["grad.hidden_states"] = h.grad.float()
        for p in params:
            grad = model.get_parameter(p).grad
            expected["grad." + p] = (grad if grad is not None else torch.zeros_like(weights[p])).float()
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        conf = dict(case=name, model=cls.__name__, d_model=D, vocab=V, **settings)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(conf, f, indent=1)
            f.write("\n")
        save_file(weights, os.path.join(d, "weights.safetensors"))
        save_file(dict({"hidden_states": hidden}, **{"grad_output." + k: v for k, v in grad_out.items()}),
                  os.path.join(d, "input.safetensors"))
        save_file({k: v.contiguous() for k, v in expected.items()}, os.path.join(d, "expected.safetensors"))
        print(f"wrote {d}: " + ", ".join(f"{k} {tuple(v.shape)}" for k, v in outs.items()))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/fixtures_heads")
    generate(ap.parse_args().out)
